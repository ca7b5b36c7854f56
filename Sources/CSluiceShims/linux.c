// Linux shims are header-only (include/sluice_linux.h).
