// OpenSSL's libcrypto, used for one thing only: the ChaCha20-Poly1305 of carrier records
// (SluiceCrypto/RecordAEAD.swift). It computes exactly what libsodium's does, about 2.5 times as
// fast on CPUs with AVX-512/AVX2 (measured in Benchmarks/MicroBench, suite "records").
#include <openssl/evp.h>
