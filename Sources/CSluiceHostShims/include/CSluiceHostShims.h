// Umbrella header of the host-side C shims: what only the Linux host layer (TUN, netlink, process
// signals) needs, kept out of the engine's dependencies. Each shim header says why it exists.
#pragma once
#include "sluice_tun.h"
#include "sluice_netlink.h"
#include "sluice_signals.h"
#include "sluice_sdbus.h"
#include "sluice_malloc.h"
