"""A second, independent implementation of the client side of the Sluice carrier protocol, written
from docs/protocol.md alone with python `cryptography`, so the tests can say what `sluice up` never
would: OPEN to 127.0.0.1 or to a domain name, HELLO out of turn, streams opened as fast as a socket
takes them, a client that predates features. Blocking and single-threaded: one carrier, a few
streams, for tests.

    c = Carrier.connect(("10.10.0.2", 7000), relay_public, client_private, psk=None, hello=True)
    sid = c.open(("domain", "localhost"), 5432)
    frame = c.wait_stream(sid)          # ("OPEN_OK", window) or ("RESET", reason, message)

Noise_IKpsk2_25519_ChaChaPoly_SHA256 (Noise spec rev 34: a psk modifier makes the "e" token MixKey
too), records as in §2 (length XORed with the length key's ChaCha20 keystream, AEAD over the payload
with the two length bytes as additional data), frames as in §3.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
import struct
import time

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

PROTOCOL_NAME = b"Noise_IKpsk2_25519_ChaChaPoly_SHA256"
PROLOGUE = b"sluice/1"

# Frame types (§3).
OPEN, OPEN_OK, DATA, CREDIT, FIN, RESET, PING, PONG, GO_AWAY, DATAGRAM, DATAGRAM_ERROR, HELLO, UDP_PATH, UDP_PATH_USE = range(1, 15)
NAMES = {1: "OPEN", 2: "OPEN_OK", 3: "DATA", 4: "CREDIT", 5: "FIN", 6: "RESET", 7: "PING", 8: "PONG",
         9: "GO_AWAY", 10: "DATAGRAM", 11: "DATAGRAM_ERROR", 12: "HELLO", 13: "UDP_PATH", 14: "UDP_PATH_USE"}
# Reset reasons.
CLOSED, REFUSED, UNREACHABLE, TIMED_OUT, LIMIT, PROTOCOL_ERROR, FORBIDDEN = range(7)
FEATURE_POLICY_REFUSALS = 1
FEATURE_UDP_PATH = 2
FEATURE_UDP_PATH_BUNDLES = 4
FEATURE_UDP_PATH_OPENS = 8
# UDP path packet kinds (§8).
PATH_DATAGRAM, PATH_PROBE, PATH_PROBE_REPLY, PATH_BUNDLE = 1, 2, 3, 4


def _hmac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


def _hkdf(ck: bytes, ikm: bytes, n: int) -> list[bytes]:
    temp = _hmac(ck, ikm)
    out, prev = [], b""
    for i in range(1, n + 1):
        prev = _hmac(temp, prev + bytes([i]))
        out.append(prev)
    return out


def _noise_nonce(n: int) -> bytes:
    return b"\0\0\0\0" + struct.pack("<Q", n)


def _raw(pub: X25519PublicKey) -> bytes:
    return pub.public_bytes(Encoding.Raw, PublicFormat.Raw)


class _Symmetric:
    def __init__(self) -> None:
        self.h = hashlib.sha256(PROTOCOL_NAME).digest() if len(PROTOCOL_NAME) > 32 else PROTOCOL_NAME.ljust(32, b"\0")
        self.ck = self.h
        self.k: bytes | None = None
        self.n = 0

    def mix_hash(self, data: bytes) -> None:
        self.h = hashlib.sha256(self.h + data).digest()

    def mix_key(self, ikm: bytes) -> None:
        self.ck, k = _hkdf(self.ck, ikm, 2)
        self.k, self.n = k, 0

    def mix_key_and_hash(self, ikm: bytes) -> None:
        self.ck, th, k = _hkdf(self.ck, ikm, 3)
        self.mix_hash(th)
        self.k, self.n = k, 0

    def encrypt_and_hash(self, plaintext: bytes) -> bytes:
        c = ChaCha20Poly1305(self.k).encrypt(_noise_nonce(self.n), plaintext, self.h)
        self.n += 1
        self.mix_hash(c)
        return c

    def decrypt_and_hash(self, ciphertext: bytes) -> bytes:
        p = ChaCha20Poly1305(self.k).decrypt(_noise_nonce(self.n), ciphertext, self.h)
        self.n += 1
        self.mix_hash(ciphertext)
        return p

    def split(self) -> tuple[bytes, bytes]:
        k1, k2 = _hkdf(self.ck, b"", 2)
        return k1, k2


def tai64n(now: float | None = None) -> bytes:
    t = time.time() if now is None else now
    return struct.pack(">QI", int(t) + (1 << 62), int((t % 1) * 1e9))


def handshake_message1(client: X25519PrivateKey, relay_public: bytes, psk: bytes | None):
    """Message 1 (125 bytes) and the state to read message 2 with."""
    psk = psk or bytes(32)
    ss = _Symmetric()
    ss.mix_hash(PROLOGUE)
    ss.mix_hash(relay_public)
    rs = X25519PublicKey.from_public_bytes(relay_public)
    e = X25519PrivateKey.generate()
    e_pub = _raw(e.public_key())
    ss.mix_hash(e_pub)
    ss.mix_key(e_pub)  # psk modifier
    ss.mix_key(e.exchange(rs))  # es
    s_enc = ss.encrypt_and_hash(_raw(client.public_key()))
    ss.mix_key(client.exchange(rs))  # ss
    ts = tai64n()
    proof = _hmac(psk, b"sluice psk proof" + e_pub + ts)[:16]
    payload = ss.encrypt_and_hash(bytes([1]) + ts + proof)
    msg = e_pub + s_enc + payload
    assert len(msg) == 125
    return msg, (ss, e, client, psk)


def handshake_finish(state, message2: bytes) -> tuple[bytes, bytes, int]:
    """Reads message 2 (64 bytes): (key client→relay, key relay→client, the relay's feature bits)."""
    ss, e, client, psk = state
    re_pub = message2[:32]
    re = X25519PublicKey.from_public_bytes(re_pub)
    ss.mix_hash(re_pub)
    ss.mix_key(re_pub)  # psk modifier
    ss.mix_key(e.exchange(re))  # ee
    ss.mix_key(client.exchange(re))  # se
    ss.mix_key_and_hash(psk)
    payload = ss.decrypt_and_hash(message2[32:])
    assert payload[0] == 1, f"relay speaks version {payload[0]}"
    features = struct.unpack(">I", payload[1:5])[0]
    k_c2r, k_r2c = ss.split()
    return k_c2r, k_r2c, features


class _Records:
    """One direction's record keys and counter (§2); rekeying after 2^20 records is not needed here."""

    def __init__(self, key: bytes) -> None:
        self.key = key
        self.length_key = _hmac(key, b"sluice length")
        self.n = 0

    def _mask(self) -> bytes:
        nonce = struct.pack("<I", 0) + _noise_nonce(self.n)  # block counter 0, then the 12-byte nonce
        enc = Cipher(algorithms.ChaCha20(self.length_key, nonce), mode=None).encryptor()
        return enc.update(b"\0\0")

    def seal(self, plaintext: bytes) -> bytes:
        assert 1 <= len(plaintext) <= 65519
        mask = self._mask()
        length = bytes(a ^ b for a, b in zip(struct.pack(">H", len(plaintext)), mask))
        body = ChaCha20Poly1305(self.key).encrypt(_noise_nonce(self.n), plaintext, length)
        self.n += 1
        return length + body

    def open_length(self, head: bytes) -> int:
        return struct.unpack(">H", bytes(a ^ b for a, b in zip(head, self._mask())))[0]

    def open(self, head: bytes, body: bytes) -> bytes:
        p = ChaCha20Poly1305(self.key).decrypt(_noise_nonce(self.n), body, head)
        self.n += 1
        return p


def frame(ftype: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">BIH", ftype, stream, len(payload)) + payload


def open_payload(window: int, proto: int, host, port: int) -> bytes:
    """OPEN's payload. `host`: an address string, or ("domain", name)."""
    if isinstance(host, tuple):
        name = host[1].encode()
        addr = bytes([3, len(name)]) + name
    elif ":" in host:
        addr = bytes([4]) + socket.inet_pton(socket.AF_INET6, host)
    else:
        addr = bytes([1]) + socket.inet_aton(host)
    return struct.pack(">IB", window, proto) + addr + struct.pack(">H", port)


def endpoint_bytes(host: str, port: int) -> bytes:
    if ":" in host:
        return bytes([4]) + socket.inet_pton(socket.AF_INET6, host) + struct.pack(">H", port)
    return bytes([1]) + socket.inet_aton(host) + struct.pack(">H", port)


def parse_frames(plaintext: bytes) -> list[tuple[int, int, bytes]]:
    out, at = [], 0
    while at < len(plaintext):
        t, s, n = struct.unpack(">BIH", plaintext[at:at + 7])
        out.append((t, s, plaintext[at + 7:at + 7 + n]))
        at += 7 + n
    return out


class Carrier:
    """One carrier to a relay, spoken by hand."""

    def __init__(self, sock: socket.socket, k_c2r: bytes, k_r2c: bytes, features: int) -> None:
        self.sock = sock
        self.out = _Records(k_c2r)
        self.inbound = _Records(k_r2c)
        self.features = features
        self.buffer = b""
        self.next_id = 1
        self.frames: list[tuple[int, int, bytes]] = []

    @classmethod
    def connect(cls, relay: tuple[str, int], relay_public: bytes, client_private: bytes, psk: bytes | None = None,
                hello: bool | int = True, sock: socket.socket | None = None, timeout: float = 5) -> "Carrier":
        """Handshake; then HELLO (if the relay advertised features and `hello` is not False; an int
        `hello` is sent as the bits) — `hello=False` plays a client that predates features."""
        s = sock or socket.create_connection(relay, timeout=timeout)
        s.settimeout(timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        msg1, state = handshake_message1(X25519PrivateKey.from_private_bytes(client_private), relay_public, psk)
        s.sendall(msg1)
        msg2 = _recv_exactly(s, 64)
        k1, k2, features = handshake_finish(state, msg2)
        c = cls(s, k1, k2, features)
        if hello is not False and features:
            c.send_frames([frame(HELLO, 0, struct.pack(">I", FEATURE_POLICY_REFUSALS if hello is True else hello))])
        return c

    def send_frames(self, frames: list[bytes]) -> None:
        """Packs frames into as few records as fit and sends them."""
        record, out = b"", []
        for f in frames:
            if len(record) + len(f) > 65519:
                out.append(self.out.seal(record))
                record = b""
            record += f
        if record:
            out.append(self.out.seal(record))
        self.sock.sendall(b"".join(out))

    def open(self, host, port: int, window: int = 256 * 1024, proto: int = 6, send: bool = True):
        sid = self.next_id
        self.next_id += 2
        f = frame(OPEN, sid, open_payload(window, proto, host, port))
        if send:
            self.send_frames([f])
            return sid
        return sid, f

    def read_frames(self, timeout: float | None = None) -> list[tuple[int, int, bytes]]:
        """Reads at least one record (blocking up to `timeout`); answers PING; returns its frames."""
        if timeout is not None:
            self.sock.settimeout(timeout)
        while True:
            if len(self.buffer) >= 2:
                n = self.inbound.open_length(self.buffer[:2])
                if len(self.buffer) >= 2 + n + 16:
                    head, body = self.buffer[:2], self.buffer[2:2 + n + 16]
                    self.buffer = self.buffer[2 + n + 16:]
                    frames = parse_frames(self.inbound.open(head, body))
                    pongs = [frame(PONG, 0, p) for (t, _, p) in frames if t == PING]
                    if pongs:
                        self.send_frames(pongs)
                    return frames
            b = self.sock.recv(1 << 20)
            if not b:
                raise ConnectionError("the relay closed the carrier")
            self.buffer += b

    def wait_stream(self, sid: int, timeout: float = 5):
        """The relay's answer to OPEN `sid`: ("OPEN_OK", window) or ("RESET", reason, message)."""
        deadline = time.monotonic() + timeout
        while True:
            for i, (t, s, p) in enumerate(self.frames):
                if s == sid and t in (OPEN_OK, RESET):
                    del self.frames[i]
                    if t == OPEN_OK:
                        return ("OPEN_OK", struct.unpack(">I", p)[0])
                    return ("RESET", p[0], p[1:].decode(errors="replace"))
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer to OPEN {sid} within {timeout} s")
            self.frames += self.read_frames(timeout=left)

    def flood_opens(self, host, port: int, seconds: float, batch: int = 2000) -> int:
        """Sends OPENs as fast as the relay takes them, for `seconds`, while a thread reads and drops
        whatever comes back (the relay's OPEN_OK and RESET frames, never decrypted). Returns the
        number of OPENs sent. The carrier is unusable afterwards: its socket is shut down."""
        import threading
        self.sock.settimeout(None)  # blocking: a send waits while the relay reads nothing

        def drain() -> None:
            while True:
                try:
                    if not self.sock.recv(1 << 20):
                        return
                except OSError:
                    return

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        sent = 0
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                frames = []
                for _ in range(batch):
                    frames.append(frame(OPEN, self.next_id, open_payload(65536, 6, host, port)))
                    self.next_id += 2
                self.send_frames(frames)
                sent += batch
        finally:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            reader.join(2)
        return sent

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class UDPPath:
    """The client end of a carrier's UDP path (§8), from the carrier's record keys and the index of
    the relay's UDP_PATH frame: packets sealed and opened by hand, counters chosen by the caller."""

    def __init__(self, carrier: Carrier, index: int) -> None:
        self.index = index
        self.k_send = _hmac(carrier.out.key, b"sluice udp path")
        self.k_receive = _hmac(carrier.inbound.key, b"sluice udp path")
        self.counter = 0

    @staticmethod
    def header(kind: int, index: int, counter: int) -> bytes:
        return bytes([kind, 0, 0, 0]) + struct.pack(">IQ", index, counter)

    def seal(self, kind: int, plaintext: bytes, counter: int | None = None) -> bytes:
        if counter is None:
            counter, self.counter = self.counter, self.counter + 1
        head = self.header(kind, self.index, counter)
        return head + ChaCha20Poly1305(self.k_send).encrypt(_noise_nonce(counter), plaintext, head)

    def open(self, packet: bytes) -> tuple[int, int, bytes]:
        """(kind, counter, plaintext) of a packet from the relay; raises if it does not authenticate."""
        kind, index, counter = packet[0], *struct.unpack(">IQ", packet[4:16])
        assert index == self.index, f"index {index}, expected {self.index}"
        return kind, counter, ChaCha20Poly1305(self.k_receive).decrypt(_noise_nonce(counter), packet[16:], packet[:16])

    def probe(self, opaque: int, padding: int = 0) -> bytes:
        return self.seal(PATH_PROBE, struct.pack(">Q", opaque) + bytes(padding))

    def datagram(self, stream: int, host: str, port: int, data: bytes) -> bytes:
        return self.seal(PATH_DATAGRAM, struct.pack(">I", stream) + endpoint_bytes(host, port) + data)

    def bundle(self, datagrams: list[tuple[int, str, int, bytes]]) -> bytes:
        """A BUNDLE (kind 4): each (stream, host, port, data) as a length and a DATAGRAM plaintext."""
        entries = [struct.pack(">I", s) + endpoint_bytes(h, p) + d for s, h, p, d in datagrams]
        return self.seal(PATH_BUNDLE, b"".join(struct.pack(">H", len(e)) + e for e in entries))

    @staticmethod
    def datagrams(kind: int, plaintext: bytes) -> list[tuple[int, bytes, bytes]]:
        """(stream, endpoint bytes, data) of each datagram a DATAGRAM or BUNDLE plaintext holds
        (IPv4 endpoints: 7 bytes)."""
        entries = [plaintext]
        if kind == PATH_BUNDLE:
            entries, at = [], 0
            while at < len(plaintext):
                n, = struct.unpack(">H", plaintext[at:at + 2])
                entries.append(plaintext[at + 2:at + 2 + n])
                at += 2 + n
        return [(struct.unpack(">I", e[:4])[0], e[4:11], e[11:]) for e in entries]


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    got = b""
    while len(got) < n:
        b = s.recv(n - len(got))
        if not b:
            raise ConnectionError(f"closed after {len(got)} of {n} bytes")
        got += b
    return got


def private_key_bytes(b64_text: str) -> bytes:
    import base64
    return base64.b64decode(b64_text.strip())


def random_private() -> bytes:
    return os.urandom(32)
