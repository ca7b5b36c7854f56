#!/usr/bin/env python3
"""Writes records.json: carrier records (docs/protocol.md §2) computed independently of Sluice.

    python3 records.py > records.json

Uses the `cryptography` package (OpenSSL underneath) for ChaCha20-Poly1305 and ChaCha20, and the
standard library's hmac: nothing of libsodium, which Sluice seals with. Two streams over the same
20 plaintexts of the sizes where vectorised code changes path, up to the largest record: one with
the protocol's rekey interval (2^20, so one key), one rekeying every 4 records. For each record it
keeps the masked length, the tag and the SHA-256 of the whole record, which pins every byte.
"""
import hashlib
import hmac
import json

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

KEY = bytes((i * 7 + 3) & 0xFF for i in range(32))
SIZES = [1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 511, 512, 1023, 1024, 4095, 4096, 16384, 16385, 65518, 65519]


def plaintext(size: int) -> bytes:
    return bytes((i * 31 + size) & 0xFF for i in range(size))


def nonce(counter: int) -> bytes:
    return b"\0" * 4 + counter.to_bytes(8, "little")


def rekey(key: bytes) -> bytes:
    return ChaCha20Poly1305(key).encrypt(b"\0" * 4 + b"\xff" * 8, b"\0" * 32, b"")[:32]


def mask(key: bytes, counter: int) -> int:
    length_key = hmac.new(key, b"sluice length", hashlib.sha256).digest()
    stream = Cipher(algorithms.ChaCha20(length_key, b"\0" * 4 + nonce(counter)), mode=None).encryptor()
    block = stream.update(b"\0\0")
    return block[0] << 8 | block[1]


def stream(interval: int) -> list[dict]:
    key, out = KEY, []
    for counter, size in enumerate(SIZES):
        if counter > 0 and counter % interval == 0:
            key = rekey(key)
        masked = (size ^ mask(key, counter)).to_bytes(2, "big")
        sealed = ChaCha20Poly1305(key).encrypt(nonce(counter), plaintext(size), masked)
        record = masked + sealed
        out.append({"size": size, "length": masked.hex(), "tag": record[-16:].hex(),
                    "sha256": hashlib.sha256(record).hexdigest()})
    return out


print(json.dumps({"key": KEY.hex(), "plaintext": "byte i = (i * 31 + size) mod 256",
                  "streams": [{"rekey_interval": 1 << 20, "records": stream(1 << 20)},
                              {"rekey_interval": 4, "records": stream(4)}]}, indent=1))
