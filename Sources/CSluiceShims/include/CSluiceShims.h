// Umbrella header of the C shims. Each shim header says why it exists.
#pragma once
#include "sluice_linux.h"
#include "sluice_tun.h"
#include "sluice_netlink.h"
#include "sluice_checksum.h"
#include "sluice_sdbus.h"
