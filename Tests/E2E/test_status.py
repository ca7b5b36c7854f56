"""`sluice status`: what a running tunnel and relay report over their control sockets — carriers up,
byte counts that match a known transfer, the relay's clients by public key, the --watch display in
a terminal, and one clear line when nothing answers.
"""

import json
import os
import pty
import select
import socket
import subprocess
import threading
import time

import pytest

import content
import harness as h

pytestmark = pytest.mark.sluice

DOWN = 8 * content.MiB
UP = 4 * content.MiB


def status(t, *args, ns=None) -> subprocess.CompletedProcess:
    return t.topo.exec(ns or t.topo.client, [h.sluice_bin(), "status", *args], timeout=20)


def test_status_reports_carriers_bytes_and_clients(make_tunnel):
    t = make_tunnel(carriers=2)
    control = t.relay_argv[t.relay_argv.index("--control") + 1]
    down = t.runner.workdir / "down.bin"
    r = h.curl(t.topo, ["-o", str(down), h.url(t.topo, "ipv4", f"/bytes/{DOWN}")], max_time=60)
    assert r.ok, r.stderr
    src = t.runner.workdir / "up.bin"
    content.write_file(str(src), UP)
    r = h.curl(t.topo, ["-T", str(src), "-o", "/dev/null", h.url(t.topo, "ipv4", "/upload")], max_time=60)
    assert r.ok, r.stderr

    cp = status(t, "--tun", h.TUN, "--json")
    assert cp.returncode == 0, cp.stderr
    report = json.loads(cp.stdout)
    assert report["relays"] == [] and len(report["tunnels"]) == 1
    tunnel = report["tunnels"][0]
    stats = tunnel["statistics"]
    assert tunnel["kind"] == "tunnel" and tunnel["tun"] == h.TUN and tunnel["pid"] == t.client.pid
    assert stats["state"] == "connected"
    assert [c["state"] for c in stats["carriers"]] == ["up", "up"]
    assert all(c["lastHandshake"] > time.time() - 600 for c in stats["carriers"])
    assert stats["relayPublicKey"] == t.relay_key.public
    # Payload counts: the bodies plus a few hundred bytes of HTTP headers each way.
    assert DOWN <= stats["traffic"]["tcpBytesDown"] <= DOWN * 1.01, stats["traffic"]
    assert UP <= stats["traffic"]["tcpBytesUp"] <= UP * 1.01, stats["traffic"]
    carried = sum(c["bytesReceived"] for c in stats["carriers"])
    assert DOWN <= carried <= DOWN * 1.01, "the carriers' encrypted bytes: payload plus records and frames"

    # The table for people names the same things.
    cp = status(t, "--tun", h.TUN)
    assert cp.returncode == 0, cp.stderr
    assert f"tunnel {h.TUN}" in cp.stdout and "carrier #1: up" in cp.stdout and "carrier #2: up" in cp.stdout, cp.stdout

    cp = status(t, "--relay", "--control", control, "--json", ns=t.topo.relay)
    assert cp.returncode == 0, cp.stderr
    relay = json.loads(cp.stdout)["relays"][0]["statistics"]
    assert relay["carriers"] == 2
    [client] = relay["clients"]
    assert client["publicKey"] == t.client_key.public[:8] + "…", "the key as the operator wrote it"
    assert client["carriers"] == 2 and len(client["addresses"]) == 2
    assert all(a.startswith("10.10.0.1:") for a in client["addresses"])
    assert DOWN <= client["bytesSent"] <= DOWN * 1.01
    relay_log = open(t.relay.log).read()
    assert f"client {t.client_key.public[:8]}…" in relay_log, "logs name clients the same way"


def test_status_watch_refreshes_in_a_terminal(make_tunnel):
    t = make_tunnel()
    master, slave = pty.openpty()
    proc = subprocess.Popen(["ip", "netns", "exec", t.topo.client, h.sluice_bin(), "status", "--watch"],
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
    finally:
        proc.kill()
        proc.wait(5)
        os.close(master)
    assert seen.count(b"\x1b[2J") >= 3, f"not refreshed each second: {seen[:400]!r}"
    assert seen.count(f"tunnel {h.TUN}".encode()) >= 3


def test_status_with_nothing_running_says_so(runner):
    cp = subprocess.run([h.sluice_bin(), "status", "--tun", "nosuch0"], capture_output=True, text=True, timeout=20)
    assert cp.returncode == 1
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and "no tunnel or relay is running" in lines[0] and "nosuch0.sock" in lines[0], cp.stderr
    assert cp.stdout == ""


def test_status_refuses_a_socket_that_is_not_ours(runner):
    path = str(runner.workdir / "other.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)

    def answer_garbage():
        conn, _ = server.accept()
        conn.recv(100)
        conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n")
        conn.close()

    thread = threading.Thread(target=answer_garbage, daemon=True)
    thread.start()
    try:
        cp = subprocess.run([h.sluice_bin(), "status", "--relay", "--control", path], capture_output=True, text=True, timeout=20)
    finally:
        thread.join(5)
        server.close()
    assert cp.returncode == 1
    assert "is not a sluice control socket" in cp.stderr and len(cp.stderr.strip().splitlines()) == 1, cp.stderr
