"""`sluice socks`: a SOCKS5 and HTTP proxy in the client namespace, run as the unprivileged user
nobody, whose clients' connections go as streams of encrypted carriers to a relay in the relay
namespace. No TUN: the client namespace has no route to the server, so whatever reaches it went
through the relay.

Checked with curl as a person would use it — `--socks5-hostname`, `--proxytunnel --proxy http://`
(CONNECT) and `http_proxy=` (absolute form) — with sha256 at both ends; a name that only the relay's
/etc/hosts knows resolves (the relay runs in a mount jail with its own hosts file, so the name cannot
resolve anywhere else: no lookup happened locally); a UDP client through SOCKS5 UDP ASSOCIATE;
usernames and passwords; and a non-loopback --listen without them refused.
"""

import base64
import json
import os
import shutil
import socket
import struct
import time

import pytest

import content
import harness as h
import mountns
import netns
from conftest import record_throughput

pytestmark = pytest.mark.sluice

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
PROXY = "127.0.0.1:1080"
RELAY_ONLY_NAME = "files.relay-only.test"  # in the relay's jailed /etc/hosts, nowhere else
USER, PASSWORD = "alice", "s3cr:et"
SIZE = 8 * content.MiB



@pytest.fixture
def relay_with_hosts(runner, topology):
    """A relay whose /etc/hosts (and only its) maps RELAY_ONLY_NAME to the server."""
    relay_key = h.make_keypair(runner.workdir, "relay")
    client_key = h.make_keypair(runner.workdir, "client")
    hosts = open("/etc/hosts").read() + f"\n{netns.SERVER_V4} {RELAY_ONLY_NAME}\n"
    jail = mountns.FileJail(topology.relay, runner.workdir, {"/etc/hosts": hosts})
    relay = runner.start("relay", jail.argv(h.relay_argv(relay_key, [client_key.public])))
    h.wait_relay_listening(topology, relay)
    yield relay_key, client_key
    relay.stop()
    jail.close()


def start_proxy(runner, topology, relay_key, client_key, extra=(), listen=PROXY) -> h.Proc:
    key = runner.workdir / "client-nobody.key"
    shutil.copyfile(client_key.path, key)
    key.chmod(0o600)
    os.chown(key, 65534, 65534)
    argv = [*NOBODY, h.sluice_bin(), "socks", "--listen", listen, "--relay", f"{netns.RELAY_CLIENT_SIDE_V4}:{h.RELAY_PORT}",
            "--relay-public-key", relay_key.public, "--private-key", str(key), "--log-level", "debug", *extra]
    proxy = runner.start("socks", argv, ns=topology.client)
    host, port = listen.rsplit(":", 1)

    def ready() -> bool:
        if not proxy.alive():
            raise RuntimeError(f"sluice socks exited {proxy.popen.returncode}:\n{h.tail(proxy.log)}")
        return "carrier #1" in proxy.log.read_text(errors="replace") and \
            bool(topology.exec(topology.client, ["ss", "-Htln", f"sport = :{port}"], timeout=5).stdout.strip())

    h.wait_for(ready, 10, what="sluice socks to listen with a carrier up")
    return proxy


def curl(topology, *args, env=None, max_time=30):
    argv = ["curl", "-sS", "-g", "--max-time", str(max_time), "-w", "%{json}", *args]
    try:
        cp = topology.exec(topology.client, argv, timeout=max_time + 10, env={**h.clean_env(), **(env or {})})
    except Exception as e:  # noqa: BLE001 — reported as a failed curl
        return h.CurlResult(None, {}, str(e))
    info = {}
    try:
        info = json.loads(cp.stdout) if cp.stdout.strip() else {}
    except json.JSONDecodeError:
        pass
    return h.CurlResult(cp.returncode, info, cp.stderr.strip())


def fetch(runner, topology, what: str, *how, env=None, host=netns.SERVER_V4) -> None:
    out = runner.workdir / "fetched.bin"
    out.unlink(missing_ok=True)
    r = curl(topology, *how, "-o", str(out), f"http://{host}:{h.HTTP_PORT}/bytes/{SIZE}", env=env)
    assert r.ok, f"{what}: curl failed ({r.returncode}): {r.stderr}"
    assert content.file_sha256(out) == content.sha256(SIZE), f"{what}: content differs"
    record_throughput(f"sluice socks: {what}", SIZE, r.info["time_total"])


def test_socks5_connect_and_http_proxy_as_nobody(runner, topology, servers, relay_with_hosts):
    relay_key, client_key = relay_with_hosts
    proxy = start_proxy(runner, topology, relay_key, client_key)
    assert open(f"/proc/{proxy.pid}/status").read().count("\nUid:\t65534") == 1, "runs as nobody"
    fetch(runner, topology, "SOCKS5, IPv4", "--socks5-hostname", PROXY)
    fetch(runner, topology, "SOCKS5, IPv6 destination", "--socks5-hostname", PROXY, host=f"[{netns.SERVER_V6}]")
    fetch(runner, topology, "SOCKS5, relay-only name", "--socks5-hostname", PROXY, host=RELAY_ONLY_NAME)
    fetch(runner, topology, "HTTP CONNECT", "--proxytunnel", "--proxy", f"http://{PROXY}")
    fetch(runner, topology, "HTTP CONNECT, relay-only name", "--proxytunnel", "--proxy", f"http://{PROXY}", host=RELAY_ONLY_NAME)
    fetch(runner, topology, "HTTP absolute form", env={"http_proxy": f"http://{PROXY}"})
    fetch(runner, topology, "HTTP absolute form, relay-only name", env={"http_proxy": f"http://{PROXY}"}, host=RELAY_ONLY_NAME)
    # The name resolves nowhere on this side: curl alone cannot even look it up.
    direct = curl(topology, "-o", "/dev/null", f"http://{RELAY_ONLY_NAME}:{h.HTTP_PORT}/bytes/1", max_time=5)
    assert direct.returncode == 6, f"the client side resolved {RELAY_ONLY_NAME}: {direct.stderr}"

    # Uploads through both protocols, checked by the server.
    src = runner.workdir / "upload.bin"
    digest = content.write_file(str(src), SIZE)
    for what, how, env in (("SOCKS5", ["--socks5-hostname", PROXY], None), ("HTTP absolute form", [], {"http_proxy": f"http://{PROXY}"})):
        reply = runner.workdir / "reply.json"
        r = curl(topology, *how, "-T", str(src), "-o", str(reply), f"http://{RELAY_ONLY_NAME}:{h.HTTP_PORT}/upload", env=env)
        assert r.ok, f"{what} upload: {r.stderr}"
        answer = json.loads(reply.read_text())
        assert answer["sha256"] == digest and answer["peer"] == netns.RELAY_SERVER_SIDE_V4, f"{what} upload: {answer}"

    # A refused destination: SOCKS5 "connection refused", HTTP 502.
    r = curl(topology, "--socks5-hostname", PROXY, "-o", "/dev/null", f"http://{netns.SERVER_V4}:{h.CLOSED_PORT}/")
    assert r.returncode == 97 and r.stderr.endswith("(5)"), f"SOCKS5 reply 5 (connection refused): {r.returncode}: {r.stderr}"
    r = curl(topology, "-o", "/dev/null", f"http://{netns.SERVER_V4}:{h.CLOSED_PORT}/", env={"http_proxy": f"http://{PROXY}"})
    assert r.ok and r.info.get("http_code") == 502, f"{r.returncode} {r.info.get('http_code')}: {r.stderr}"
    assert proxy.alive()


def socks5_udp_associate(topology, control: socket.socket, auth: tuple[str, str] | None = None) -> tuple[str, int]:
    """The SOCKS5 handshake for UDP ASSOCIATE on `control`; returns the relay address to send to."""
    methods = b"\x02" if auth else b"\x00"
    control.sendall(b"\x05\x01" + methods)
    assert control.recv(2) == b"\x05" + methods
    if auth:
        user, password = (x.encode() for x in auth)
        control.sendall(bytes([1, len(user)]) + user + bytes([len(password)]) + password)
        assert control.recv(2) == b"\x01\x00", "credentials refused"
    control.sendall(b"\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00")
    reply = control.recv(10)
    assert reply[:4] == b"\x05\x00\x00\x01", f"UDP ASSOCIATE refused: {reply!r}"
    return socket.inet_ntoa(reply[4:8]), struct.unpack("!H", reply[8:10])[0]


def test_udp_associate_round_trip(runner, topology, servers, relay_with_hosts):
    relay_key, client_key = relay_with_hosts
    start_proxy(runner, topology, relay_key, client_key)
    control = topology.socket(topology.client)
    control.settimeout(5)
    control.connect(("127.0.0.1", 1080))
    udp = topology.socket(topology.client, socket.AF_INET, socket.SOCK_DGRAM)
    udp.settimeout(3)
    try:
        relay_addr = socks5_udp_associate(topology, control)
        header = b"\x00\x00\x00\x01" + socket.inet_aton(netns.SERVER_V4) + struct.pack("!H", h.UDP_PORT)
        for i in range(3):
            udp.sendto(header + b"E" + f"via udp associate {i}".encode(), relay_addr)
            data, src = udp.recvfrom(65535)
            assert src == relay_addr
            assert data[:10] == header, f"the answer's header names its source: {data[:10]!r}"
            peer, _, echoed = __import__("udpecho").parse_echo_reply(data[10:])
            assert echoed == f"via udp associate {i}".encode() and peer == netns.RELAY_SERVER_SIDE_V4
    finally:
        udp.close()
        control.close()


def test_authentication_and_open_listen(runner, topology, servers, relay_with_hosts):
    relay_key, client_key = relay_with_hosts
    # Without --auth-file, a non-loopback address is refused with one line, exit 2, before anything starts.
    cp = h.run_sluice(["socks", "--listen", f"{netns.CLIENT_V4}:1080", "--relay", f"{netns.RELAY_CLIENT_SIDE_V4}:{h.RELAY_PORT}",
                       "--relay-public-key", relay_key.public, "--private-key", str(client_key.path)], ns=topology.client)
    err = cp.stderr.decode(errors="replace").strip()
    assert cp.returncode == 2 and len(err.splitlines()) == 1 and "--auth-file" in err and "loopback" in err, err

    users = runner.workdir / "users"
    users.write_text(f"# who may use the proxy\n{USER}:{PASSWORD}\n")
    users.chmod(0o600)
    os.chown(users, 65534, 65534)
    listen = f"{netns.CLIENT_V4}:1080"
    start_proxy(runner, topology, relay_key, client_key, extra=["--auth-file", str(users)], listen=listen)
    url = f"http://{netns.SERVER_V4}:{h.HTTP_PORT}/bytes/1000"
    quoted = PASSWORD.replace(":", "%3A")
    assert not curl(topology, "-o", "/dev/null", "--proxy", f"socks5h://{listen}", url).ok, "SOCKS5 without credentials"
    assert not curl(topology, "-o", "/dev/null", "--proxy", f"socks5h://{USER}:wrong@{listen}", url).ok, "a wrong password"
    assert curl(topology, "-o", "/dev/null", "--proxy", f"socks5h://{USER}:{quoted}@{listen}", url).ok, "SOCKS5 with credentials"
    r = curl(topology, "-o", "/dev/null", "--proxy", f"http://{listen}", url)
    assert r.info.get("http_code") == 407, f"HTTP without credentials: {r.info.get('http_code')}"
    r = curl(topology, "-o", "/dev/null", "--proxy", f"http://{USER}:{quoted}@{listen}", url)
    assert r.ok and r.info.get("http_code") == 200, f"HTTP with credentials: {r.info.get('http_code')} {r.stderr}"
    r = curl(topology, "-o", "/dev/null", "--proxytunnel", "--proxy", f"http://{USER}:{quoted}@{listen}", url)
    assert r.ok and r.info.get("http_code") == 200, f"CONNECT with credentials: {r.stderr}"
    control = topology.socket(topology.client)
    control.settimeout(5)
    control.connect((netns.CLIENT_V4, 1080))
    try:
        socks5_udp_associate(topology, control, auth=(USER, PASSWORD))
    finally:
        control.close()
