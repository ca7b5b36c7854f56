"""Checks of the harness itself: they hold in both modes and need no sluice binary.

They guard the premises the Sluice tests rest on: in sluice mode the client cannot reach the server
except through a tunnel, the counting proxy counts exactly, and packets injected with rawpackets.py
reach a TUN device's reader unchanged.
"""

import errno
import json
import socket
import time

import harness as h
import netns


def connect_error(topo, ns, family, addr, port, timeout=1.0):
    s = topo.socket(ns, family)
    s.settimeout(timeout)
    try:
        return s.connect_ex((addr, port))
    except socket.timeout:
        return errno.ETIMEDOUT
    finally:
        s.close()


def test_client_reaches_server_only_as_the_mode_allows(topology, servers):
    topo = topology
    for family, fam, addr in (("ipv4", socket.AF_INET, netns.SERVER_V4), ("ipv6", socket.AF_INET6, netns.SERVER_V6)):
        err = connect_error(topo, topo.client, fam, addr, h.HTTP_PORT)
        if topo.mode == "kernel":
            assert err == 0, f"{family}: kernel forwarding should reach the server, got {errno.errorcode.get(err, err)}"
        else:
            assert err == errno.ENETUNREACH, f"{family}: client must have no route to the server, got {err}"
    if topo.mode == "sluice":
        # Even with a route through the relay the relay must not forward: the tunnel is the only way.
        topo.exec(topo.client, ["ip", "route", "add", netns.SERVER_NET_V4, "via", netns.RELAY_CLIENT_SIDE_V4], check=True)
        topo.exec(topo.client, ["ip", "-6", "route", "add", netns.SERVER_NET_V6, "via", netns.RELAY_CLIENT_SIDE_V6],
                  check=True)
        try:
            for fam, addr in ((socket.AF_INET, netns.SERVER_V4), (socket.AF_INET6, netns.SERVER_V6)):
                assert connect_error(topo, topo.client, fam, addr, h.HTTP_PORT) != 0, "relay namespace forwards"
        finally:
            topo.exec(topo.client, ["ip", "route", "del", netns.SERVER_NET_V4])
            topo.exec(topo.client, ["ip", "-6", "route", "del", netns.SERVER_NET_V6])
    forward = topo.exec(topo.relay, ["cat", "/proc/sys/net/ipv4/ip_forward"], check=True).stdout.strip()
    assert forward == ("1" if topo.mode == "kernel" else "0")


def test_counting_proxy_counts_and_captures(topology, servers, runner):
    topo = topology
    proxy = h.start_proxy(runner, topo, f"{netns.RELAY_CLIENT_SIDE_V4}:{h.PROXY_PORT}",
                          f"{netns.SERVER_V4}:{h.TCP_PORT}")
    payload = b"I" + bytes(range(256)) * 4
    s = topo.socket(topo.client)
    s.settimeout(5)
    s.connect((netns.RELAY_CLIENT_SIDE_V4, h.PROXY_PORT))
    s.sendall(payload)
    got = b""
    while len(got) < len(payload) - 1:
        got += s.recv(65536)
    s.close()
    assert got == payload[1:]
    conn = h.wait_for(lambda: [c for c in proxy.connections() if c["closed_by"]], 5, what="proxy to see the close")[0]
    assert (conn["c2s"], conn["s2c"]) == (len(payload), len(payload) - 1)
    assert bytes.fromhex(conn["first_c2s"]) == payload[:125]
    assert conn["closed_by"] == "client"


def test_raw_packets_reach_a_tun_reader_unchanged(topology):
    """rawpackets.py self-test, in the client namespace: its own TUN device reads back every packet
    of the corpus byte for byte, and the kernel accepts well-formed packets from the same builders."""
    cp = topology.exec(topology.client, [h.PY, str(h.HERE / "rawpackets.py"), "self-test", "--dev", "e2etun0"],
                       timeout=30)
    assert cp.returncode == 0, f"rawpackets.py self-test failed: {cp.stderr[-2000:]}"
    res = json.loads(cp.stdout)
    assert res["errors"] == {} and res["sent"] == res["packets"], res
    assert res["missing"] == [], f"packets that did not reach the reader: {res['missing']}"
    assert all(res["builders_accepted"].values()), f"the kernel refused well-formed packets: {res['builders_accepted']}"
