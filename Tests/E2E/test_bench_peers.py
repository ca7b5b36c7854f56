"""The benchmark's peer modes (Benchmarks/e2e/peers.py): wireguard-go and OpenVPN in the three
namespaces, as `make bench` runs them.

A peer's tunnel must carry traffic with the relay's address as its source (masquerade), and the relay
namespace must forward nothing but the VPN device's traffic; one short measurement per peer must give
every figure the table shows, with the processes' CPU and RSS on both sides. No sluice binary needed.
"""

import dataclasses
import hashlib
import os
import re
import socket
import sys
import threading
from pathlib import Path

import pytest

import netns

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Benchmarks" / "e2e"))
import bench  # noqa: E402
import measure  # noqa: E402
import peers  # noqa: E402

PORT = 9300
VERSION = {"wireguard-go": r"^wireguard-go v0\.0\.\d{8}", "openvpn": r"^OpenVPN 2\.6\.\d+ "}


@pytest.fixture
def plain(request, runner):
    """Namespaces with the relay forwarding nothing by itself (the peer's setup turns it on)."""
    topo = netns.Topology(mode="sluice", tag="e2e")

    def finish() -> None:
        runner.close()
        topo.destroy()

    request.addfinalizer(finish)
    return topo.create()


def _connect(topo, addr: str, timeout: float) -> tuple[str, bytes] | None:
    """A TCP connection from the client namespace to a listener on every server address: the peer
    address the server saw and the SHA-256 of 1 MiB it received, or None when no connection came."""
    listener = netns.socket_in(topo.server)
    client = netns.socket_in(topo.client)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("0.0.0.0", PORT))
        listener.listen(1)
        listener.settimeout(timeout)
        client.settimeout(timeout)
        data = os.urandom(1 << 20)

        def send() -> None:
            try:
                client.connect((addr, PORT))
                client.sendall(data)
                client.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # no connection: the accept below times out and says so

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        try:
            conn, peer = listener.accept()
        except socket.timeout:
            return None
        with conn:
            conn.settimeout(timeout)
            got = b""
            while chunk := conn.recv(1 << 16):
                got += chunk
        sender.join(timeout)
        assert got == data, f"{len(got)} bytes arrived, not the {len(data)} sent (or not the same ones)"
        return peer[0], hashlib.sha256(got).digest()
    finally:
        client.close()
        listener.close()


@pytest.mark.parametrize("mode", peers.MODES)
def test_peer_tunnel_masquerades_and_relay_forwards_nothing_else(mode, plain, runner):
    peer = peers.create(mode, plain, runner.workdir)
    try:
        peer.start(runner)
        seen = _connect(plain, netns.SERVER_V4, timeout=10)
        assert seen is not None, f"no connection through the {mode} tunnel"
        assert seen[0] == netns.RELAY_SERVER_SIDE_V4, f"the server saw {seen[0]}, not the relay (masquerade)"

        # A plain route around the VPN through the relay, and one back: only the relay's forward
        # policy can stop this connection now.
        netns.run(["ip", "-n", plain.client, "route", "add", f"{netns.SERVER2_V4}/32", "via", netns.RELAY_CLIENT_SIDE_V4])
        netns.run(["ip", "-n", plain.server, "route", "add", netns.CLIENT_NET_V4, "via", netns.RELAY_SERVER_SIDE_V4])
        assert _connect(plain, netns.SERVER2_V4, timeout=1.5) is None, \
            "the relay forwarded traffic that did not come from the VPN device"
    finally:
        runner.close()
        peer.close()
    assert not list(Path("/var/run/wireguard").glob(f"wg?{os.getpid()}.sock")), "wireguard-go left its socket"


@pytest.mark.e2e_timeout(90)
@pytest.mark.parametrize("mode", peers.MODES)
def test_peer_mode_gives_every_figure(mode, workdir):
    settings = dataclasses.replace(measure.QUICK, iperf_seconds=1, rate_seconds=0.5, latency_seconds=0.3,
                                   settle_seconds=0.2, groups=("udp", "tcp_cc", "iperf"))
    loadgen = bench.compile_c(workdir, "loadgen")
    result = measure.ModeRun(mode, settings, workdir, loadgen, say=print).run()
    assert result["errors"] == {}, result["errors"]
    figures = result["figures"]
    for key in ("udp_rr_per_s", "udp_new_per_s", "tcp_cc_per_s", "tcp_cc_latency_us", "udp_rr_latency_us",
                "udp_new_latency_us", "tcp1_up_gbps", "tcp1_down_gbps", "tcp4_up_gbps", "tcp4_down_gbps",
                "cpu_up_s_per_gb", "cpu_down_s_per_gb", "cpu_up_client_s_per_gb", "cpu_up_relay_s_per_gb",
                "cpu_down_client_s_per_gb", "cpu_down_relay_s_per_gb", "rss_idle_mib", "rss_udp_mib",
                "rss_peak_client_mib", "rss_peak_relay_mib"):
        assert figures.get(key, 0) > 0, f"{mode}: no {key} in {figures}"
    # Both ends did the work: each spent CPU on the bytes, neither is a stand-in.
    detail = result["details"]["iperf3_tcp1_up"]
    assert detail["cpu_client_s"] > 0 and detail["cpu_relay_s"] > 0, detail
    # Each second's Gbit/s, for a slow start or a stall the average hides.
    assert detail["gbps_per_second"] and all(g > 0 for g in detail["gbps_per_second"]), detail
    assert all(set(n) == {"key", "text"} for n in result["notes"]), result["notes"]
    assert re.match(VERSION[mode], peers.versions()[mode]), peers.versions()
    assert not [ns for ns in netns.list_namespaces() if ns.startswith(f"slbench-{os.getpid()}-")]
