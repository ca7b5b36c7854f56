// The one libsystemd type Swift must lay out itself: Sluice opens libsystemd.so.0 with dlopen
// (SluiceHost/SystemdLibrary.swift) and builds without its headers, so sd_bus_error, which callers
// allocate and sd_bus_call fills, is declared here with the layout of <systemd/sd-bus.h>:
//
//     typedef struct { const char *name; const char *message; int _need_free; } sd_bus_error;
//
// The soname libsystemd.so.0 fixes that ABI. Zero-initialised it is SD_BUS_ERROR_NULL.
#pragma once

typedef struct sluice_sd_bus_error {
    const char *name;
    const char *message;
    int need_free;
} sluice_sd_bus_error;

_Static_assert(sizeof(sluice_sd_bus_error) == 2 * sizeof(void *) + sizeof(void *),
               "sd_bus_error: two pointers and an int, padded to pointer alignment");
