"""The SOCKS5-upstream mode of the benchmark: `sluice up --upstream socks5://…` in the client namespace,
and dante-server (danted) in the relay namespace where `sluice relay` would be.

    client ns                              relay ns                         server ns
    application ── TUN ── sluice up ─────── danted (10.10.0.2:1080) ─────── servers (10.20.0.2)
                          (lwIP, one SOCKS5      (TCP: CONNECT;
                           connection per flow)  UDP: UDP ASSOCIATE)

It measures the TUN + lwIP side of Sluice against a plain SOCKS5 server, which is what other
tun2socks tools (hev-socks5-tunnel, tun2socks) are measured against: run them against the same
danted to compare. Which server does the other half matters as much as the tunnel: microsocks, the
other SOCKS5 server of the E2E tests, copies through small buffers and moves an order of magnitude
less (tests/E2E figures), so danted it is.

The groups that run here: udp, tcp_cc and iperf. Not idle_flows: 10,000 connections held open
would measure danted's process and file limits rather than Sluice. The "relay" CPU time is danted's
whole process tree (its I/O children move the bytes; proc.cpu_user_system counts them); its RSS is
the main process's only.
"""

from __future__ import annotations

from pathlib import Path

import harness as h
import netns
import socksservers

MODES = ("sluice-socks",)
GROUPS = ("udp", "tcp_cc", "iperf")


def start(runner: h.Runner, topo: netns.Topology, client_args: list) -> tuple[h.Proc, h.Proc]:
    """Starts danted, then `sluice up` with it as the upstream; returns (client, server) once the TUN
    exists (the caller waits for a first flow)."""
    danted = socksservers.start_danted(runner, topo, auth=False, debug=False)
    argv = [h.sluice_bin(), "up", "--upstream", socksservers.upstream_url(False), "--tun", h.TUN]
    for a in h.CLIENT_ADDRESSES:
        argv += ["--address", a]
    for r in h.CLIENT_ROUTES:
        argv += ["--route", r]
    client = runner.start("client", [*argv, *client_args], ns=topo.client)
    h.wait_client_up(topo, client)
    return client, danted.proc
