#!/usr/bin/env python3
"""A stand-in for the sluice binary, used ONLY to develop and check the end-to-end harness itself
while the real binary is being written:

    SLUICE_BIN=Tests/E2E/fake_sluice.py scripts/e2e.sh

It is not Sluice and not a reference: no lwIP, no Noise, no multiplexing. It implements the CLI
contract (flags, JSON configs, exit codes, one-line errors, keys via python cryptography) and the
observable behaviour the tests check, by simpler means:
- `up` opens a real TUN and installs the promised addresses, routes (table 21324) and rules, but the
  traffic is captured by an nftables `redirect` in the client namespace (so it needs `nft`), and each
  application connection gets its own carrier connection to the relay (one "stream" per carrier).
- message 1 is 109 bytes: client public key, a u64 timestamp, a SHA-256 tag over (psk, relay key,
  client key, timestamp), zero padding; the relay answers 64 bytes only when the key is allowed, the
  tag matches and the timestamp was never seen; otherwise it reads silently until its handshake
  timeout and closes, like the real relay.
Known differences: a refused destination resets the application's connection after accept (the
real client holds the SYN and makes connect() fail with ECONNREFUSED), and --carriers is ignored.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

TABLE, MARK = "21324", 0x534C
SO_ORIGINAL_DST = 80
NFT_TABLE = "sluice_fake"

FLAGS = {  # flag: (kind, commands)
    "listen": ("str", {"relay"}), "private-key": ("str", {"relay", "up"}),
    "allow-client": ("list", {"relay"}), "psk": ("str", {"relay", "up"}),
    "max-streams": ("int", {"relay"}), "handshake-timeout": ("num", {"relay"}),
    "log-level": ("str", {"relay", "up"}), "relay": ("str", {"up"}), "relay-public-key": ("str", {"up"}),
    "tun": ("str", {"up"}), "address": ("list", {"up"}), "route": ("list", {"up"}), "mtu": ("int", {"up"}),
    "carriers": ("int", {"up"}), "config": ("str", {"relay", "up"}),
}


class UsageError(Exception):
    pass


class RuntimeFailure(Exception):
    pass


def camel(flag: str) -> str:
    head, *rest = flag.split("-")
    return head + "".join(p.capitalize() for p in rest)


def parse(cmd: str, argv: list[str]) -> dict:
    opts: dict = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("--") or a[2:] not in FLAGS or cmd not in FLAGS[a[2:]][1]:
            raise UsageError(f"unknown flag {a} for '{cmd}'")
        if i + 1 >= len(argv):
            raise UsageError(f"{a} needs a value")
        name, value = a[2:], argv[i + 1]
        kind = FLAGS[name][0]
        if kind == "list":
            opts.setdefault(name, []).append(value)
        elif kind in ("int", "num"):
            try:
                opts[name] = int(value) if kind == "int" else float(value)
            except ValueError:
                raise UsageError(f"{a}: not a number: {value!r}")
        else:
            opts[name] = value
        i += 2
    if "config" in opts:
        path = opts.pop("config")
        try:
            cfg = json.loads(open(path).read())
        except OSError as e:
            raise UsageError(f"{path}: {e.strerror}")
        except json.JSONDecodeError as e:
            raise UsageError(f"{path}: invalid JSON: {e}")
        names = {camel(f): f for f, (_, cmds) in FLAGS.items() if cmd in cmds and f != "config"}
        for k, v in cfg.items():
            if k not in names:
                raise UsageError(f"{path}: unknown key \"{k}\"")
            kind = FLAGS[names[k]][0]
            ok = {"str": isinstance(v, str), "int": isinstance(v, int) and not isinstance(v, bool),
                  "num": isinstance(v, (int, float)) and not isinstance(v, bool),
                  "list": isinstance(v, list) and all(isinstance(x, str) for x in v)}[kind]
            if not ok:
                want = {"str": "a string", "int": "an integer", "num": "a number", "list": "an array of strings"}[kind]
                raise UsageError(f"{path}: key \"{k}\" must be {want}")
            opts.setdefault(names[k], v)
    return opts


def key_bytes(text: str, what: str) -> bytes:
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise UsageError(f"{what}: not a key (base64 of 32 bytes): {text.strip()!r}")
    return raw


def key_file(path: str, what: str) -> bytes:
    try:
        return key_bytes(open(path).read(), path)
    except OSError as e:
        raise UsageError(f"{what} {path}: {e.strerror}")


def public(priv: bytes) -> bytes:
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    return X25519PrivateKey.from_private_bytes(priv).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def endpoint(text: str, what: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    try:
        if not sep or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        raise UsageError(f"{what}: not an address:port: {text!r}")
    return host.strip("[]"), int(port)


def tag(psk: bytes, relay_pub: bytes, client_pub: bytes, ts: int) -> bytes:
    return hashlib.sha256(psk + relay_pub + client_pub + struct.pack("!Q", ts)).digest()


def splice(a: socket.socket, b: socket.socket) -> None:
    def one(src, dst):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            for s in (a, b):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    t = threading.Thread(target=one, args=(b, a), daemon=True)
    t.start()
    one(a, b)
    t.join()
    a.close()
    b.close()


def recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        d = s.recv(n - len(buf))
        if not d:
            raise ConnectionError("closed")
        buf += d
    return buf


# -- relay ------------------------------------------------------------------------------------------

def relay(o: dict) -> int:
    for req in ("listen", "private-key", "allow-client"):
        if req not in o:
            raise UsageError(f"relay needs --{req}")
    host, port = endpoint(o["listen"], "--listen")
    priv = key_file(o["private-key"], "--private-key")
    allow = {key_bytes(k, "--allow-client") for k in o["allow-client"]}
    psk = key_file(o["psk"], "--psk") if "psk" in o else bytes(32)
    timeout = float(o.get("handshake-timeout", 5))
    me = public(priv)
    seen: dict[bytes, set] = {}
    lock = threading.Lock()
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    srv = socket.socket(fam, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if fam == socket.AF_INET6:
        srv.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    try:
        srv.bind((host, port))
    except OSError as e:
        raise RuntimeFailure(f"bind {o['listen']}: {e.strerror}")
    srv.listen(1024)

    def silent(c: socket.socket, deadline: float) -> None:
        try:
            while (left := deadline - time.monotonic()) > 0:
                c.settimeout(left)
                if not c.recv(65536):
                    break
        except OSError:
            pass
        print("relay: handshake failed; closed silently", file=sys.stderr, flush=True)
        c.close()

    def serve(c: socket.socket) -> None:
        deadline = time.monotonic() + timeout
        try:
            c.settimeout(timeout)
            m1 = recv_exact(c, 109)
        except (OSError, ConnectionError):
            return silent(c, deadline)
        cpub, (ts,), t = m1[:32], struct.unpack("!Q", m1[32:40]), m1[40:72]
        with lock:
            ok = cpub in allow and t == tag(psk, me, cpub, ts) and ts not in seen.setdefault(cpub, set())
            if ok:
                seen[cpub].add(ts)
        if not ok:
            return silent(c, deadline)
        try:
            c.settimeout(10)
            c.sendall(bytes(64))
            fam_b = recv_exact(c, 1)[0]
            addr = socket.inet_ntop(socket.AF_INET if fam_b == 4 else socket.AF_INET6, recv_exact(c, 4 if fam_b == 4 else 16))
            (dport,) = struct.unpack("!H", recv_exact(c, 2))
            try:
                d = socket.create_connection((addr, dport), timeout=5)
                c.sendall(b"\x00")
            except ConnectionRefusedError:
                c.sendall(b"\x01")
                return c.close()
            except OSError:
                c.sendall(b"\x02")
                return c.close()
            c.settimeout(None)
            d.settimeout(None)
            splice(c, d)
        except (OSError, ConnectionError):
            c.close()

    print(f"relay: listening on {o['listen']}", file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


# -- client -----------------------------------------------------------------------------------------

def ip(*args: str) -> None:
    cp = subprocess.run(["ip", *args], capture_output=True, text=True)
    if cp.returncode:
        raise RuntimeFailure(f"ip {' '.join(args)}: {cp.stderr.strip()}")


def up(o: dict) -> int:
    for req in ("relay", "relay-public-key", "private-key", "tun"):
        if req not in o:
            raise UsageError(f"up needs --{req}")
    rhost, rport = endpoint(o["relay"], "--relay")
    rpub = key_bytes(o["relay-public-key"], "--relay-public-key")
    priv = key_file(o["private-key"], "--private-key")
    psk = key_file(o["psk"], "--psk") if "psk" in o else bytes(32)
    try:
        addrs = [ipaddress.ip_interface(a) for a in o.get("address", [])]
    except ValueError as e:
        raise UsageError(f"--address: {e}")
    try:
        routes = [ipaddress.ip_network(r) for r in o.get("route", [])]
    except ValueError as e:
        raise UsageError(f"--route: {e}")
    if o.get("carriers", 2) < 1:
        raise UsageError("--carriers must be at least 1")
    if not 576 <= o.get("mtu", 1500) <= 65535:
        raise UsageError("--mtu must be between 576 and 65535")
    me = public(priv)
    tun = o["tun"]

    import fcntl
    try:
        fd = os.open("/dev/net/tun", os.O_RDWR)
        fcntl.ioctl(fd, 0x400454CA, struct.pack("16sH", tun.encode(), 0x0001 | 0x1000))  # TUNSETIFF TUN|NO_PI
    except OSError as e:
        raise RuntimeFailure(f"open /dev/net/tun ({tun}): {e.strerror} — run as root or grant CAP_NET_ADMIN")

    listeners = []
    for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        s = socket.socket(fam, socket.SOCK_STREAM)
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((host, listeners[0].getsockname()[1] if listeners else 0))
        s.listen(1024)
        listeners.append(s)
    lport = listeners[0].getsockname()[1]

    def teardown() -> None:
        subprocess.run(["nft", "delete", "table", "inet", NFT_TABLE], capture_output=True)
        for v in ("-4", "-6"):
            subprocess.run(["ip", v, "rule", "del", "not", "fwmark", hex(MARK), "lookup", TABLE], capture_output=True)
            subprocess.run(["ip", v, "route", "flush", "table", TABLE], capture_output=True)
        os.close(fd)  # the TUN, its addresses and its routes go with it

    try:
        ip("link", "set", tun, "mtu", str(o.get("mtu", 1500)), "up")
        for a in addrs:
            ip("addr", "add", str(a), "dev", tun, *(["nodad"] if a.version == 6 else []))
        for r in routes:
            ip(f"-{r.version}", "route", "add", str(r), "dev", tun, "table", TABLE)
        for v in ("-4", "-6"):
            ip(v, "rule", "add", "not", "fwmark", hex(MARK), "lookup", TABLE)
        rules = "".join(f"    ip{'' if r.version == 4 else '6'} daddr {r} meta l4proto tcp redirect to :{lport}\n"
                        for r in routes)
        script = f"table inet {NFT_TABLE} {{\n  chain out {{\n    type nat hook output priority -100\n{rules}  }}\n}}\n"
        nft = subprocess.run(["nft", "-f", "-"], input=script, capture_output=True, text=True)
        if nft.returncode:
            raise RuntimeFailure(f"nft: {nft.stderr.strip()}")
    except BaseException:
        teardown()
        raise

    def flow(app: socket.socket, v6: bool) -> None:
        try:
            if v6:
                raw = app.getsockopt(socket.IPPROTO_IPV6, SO_ORIGINAL_DST, 28)
                dport, daddr, fam_b = struct.unpack("!H", raw[2:4])[0], raw[8:24], 6
            else:
                raw = app.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
                dport, daddr, fam_b = struct.unpack("!H", raw[2:4])[0], raw[4:8], 4
            c = socket.socket(socket.AF_INET6 if ":" in rhost else socket.AF_INET, socket.SOCK_STREAM)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, MARK)
            c.settimeout(5)
            c.connect((rhost, rport))
            ts = time.time_ns()
            c.sendall((me + struct.pack("!Q", ts) + tag(psk, rpub, me, ts)).ljust(109, b"\0"))
            recv_exact(c, 64)
            c.sendall(bytes([fam_b]) + daddr + struct.pack("!H", dport))
            if recv_exact(c, 1) != b"\x00":
                raise ConnectionRefusedError
            c.settimeout(None)
            splice(app, c)
        except Exception as e:  # reset the application's connection, as a failed stream does
            print(f"up: flow failed: {e!r}", file=sys.stderr, flush=True)
            app.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            app.close()

    def accept_loop(s: socket.socket, v6: bool) -> None:
        while True:
            app, _ = s.accept()
            threading.Thread(target=flow, args=(app, v6), daemon=True).start()

    for s, v6 in zip(listeners, (False, True)):
        threading.Thread(target=accept_loop, args=(s, v6), daemon=True).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"up: {tun} ready", file=sys.stderr, flush=True)
    while not stop.wait(0.2):
        pass
    teardown()
    return 0


def main(argv: list[str]) -> int:
    try:
        if not argv:
            raise UsageError("usage: sluice keygen | pubkey | relay … | up …")
        cmd, rest = argv[0], argv[1:]
        if cmd == "keygen":
            print(base64.b64encode(os.urandom(32)).decode())
            return 0
        if cmd == "pubkey":
            print(base64.b64encode(public(key_bytes(sys.stdin.read(), "stdin"))).decode())
            return 0
        if cmd == "relay":
            return relay(parse(cmd, rest))
        if cmd == "up":
            return up(parse(cmd, rest))
        raise UsageError(f"unknown command {cmd!r}")
    except UsageError as e:
        print(f"sluice: {e}", file=sys.stderr)
        return 2
    except RuntimeFailure as e:
        print(f"sluice: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
