// Umbrella header of the C shims the engine, the loop and the sockets need: epoll, accept4, the UDP
// error queue and the checksum. Each shim header says why it exists.
#pragma once
#include "sluice_linux.h"
#include "sluice_checksum.h"
