#ifndef SLUICE_MALLOC_H
#define SLUICE_MALLOC_H
// glibc's allocator tuning (mallopt), for the sluice process: see Sources/sluice/main.swift.
#include <malloc.h>
#endif
