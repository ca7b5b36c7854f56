// libgcrypt (Debian: libgcrypt20-dev), for ChaCha20-Poly1305 of records and UDP path packets
// (Sources/SluiceCrypto/ChaCha20Poly1305.swift).
//
// Why the inline functions: gcry_control is variadic, which Swift cannot call, and GCRYPT_VERSION is
// the version of the header Sluice was compiled against, which gcry_check_version compares with the
// library it runs with. Each wrapper is one documented call (libgcrypt manual, "Initializing the
// library" and "Controlling the library").
#include <gcrypt.h>

/// gcry_check_version(GCRYPT_VERSION): initialises libgcrypt; NULL when the library is older than
/// the header.
static inline const char *sluice_gcry_check_version(void) {
    return gcry_check_version(GCRYPT_VERSION);
}

/// Nonzero when the application already finished libgcrypt's initialisation
/// (GCRYCTL_INITIALIZATION_FINISHED_P).
static inline int sluice_gcry_initialization_finished(void) {
    return gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P) != 0;
}

/// GCRYCTL_DISABLE_SECMEM: no secure-memory pool (Sluice keeps its keys in its own wiped memory).
static inline gcry_error_t sluice_gcry_disable_secure_memory(void) {
    return gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
}

/// GCRYCTL_INITIALIZATION_FINISHED: the end of the application's initialisation.
static inline gcry_error_t sluice_gcry_finish_initialization(void) {
    return gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
}

/// GCRYPT_VERSION: the version of the header Sluice was compiled against.
static inline const char *sluice_gcry_header_version(void) {
    return GCRYPT_VERSION;
}
