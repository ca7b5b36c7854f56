"""Deterministic test content: both ends compute the same bytes, so a transfer is checked by sha256.

The content of size N is the first N bytes of an endless stream of 1 MiB blocks; block i is
`random.Random(SEED + i).randbytes(BLOCK)`. It never repeats, so a dropped, duplicated or reordered
piece changes the hash. Blocks are cached: generating runs at ~200 MB/s, serving from the cache is
what lets a Python server keep up with a fast tunnel.
"""

from __future__ import annotations

import hashlib
import random
import threading
from typing import Iterator

BLOCK = 1 << 20
SEED = 0x5E1CE000
MiB = 1 << 20

_blocks: dict[int, bytes] = {}
_lock = threading.Lock()
_digests: dict[int, str] = {}


def block(i: int) -> bytes:
    b = _blocks.get(i)
    if b is None:
        b = random.Random(SEED + i).randbytes(BLOCK)
        with _lock:
            _blocks[i] = b
    return b


def chunks(n: int) -> Iterator[memoryview]:
    """The content of size n, as views of the cached blocks."""
    i = 0
    while n > 0:
        take = min(n, BLOCK)
        yield memoryview(block(i))[:take]
        n -= take
        i += 1


def at(offset: int, length: int) -> bytes:
    """`length` bytes of the content starting at `offset` (across block boundaries)."""
    out = bytearray()
    while length > 0:
        i, o = divmod(offset, BLOCK)
        take = min(length, BLOCK - o)
        out += block(i)[o:o + take]
        offset += take
        length -= take
    return bytes(out)


def sha256(n: int) -> str:
    """sha256 (hex) of the content of size n."""
    d = _digests.get(n)
    if d is None:
        h = hashlib.sha256()
        for c in chunks(n):
            h.update(c)
        d = _digests[n] = h.hexdigest()
    return d


def write_file(path: str, n: int) -> str:
    """Writes the content of size n to path; returns its sha256."""
    with open(path, "wb") as f:
        for c in chunks(n):
            f.write(c)
    return sha256(n)


def stream_bytes(seed: int, n: int) -> bytes:
    """Per-connection payload for the raw TCP echo test (independent of the block stream)."""
    return random.Random(seed).randbytes(n)


if __name__ == "__main__":  # `python3 content.py N` prints the sha256 of the content of size N
    import sys

    print(sha256(int(sys.argv[1])))


def file_sha256(path) -> str:
    """The sha256 of a file's bytes, read in 1 MiB pieces (what a test downloaded)."""
    d = hashlib.sha256()
    with open(path, "rb") as f:
        while b := f.read(1 << 20):
            d.update(b)
    return d.hexdigest()
