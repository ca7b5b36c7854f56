#!/usr/bin/env python3
"""What packet loss on the client↔relay link does to flows through Sluice, against kernel forwarding
in the same run (issue 14: the UDP path, and the TCP carrier under loss).

    sudo python3 Benchmarks/e2e/lossy.py [--loss 1] [--rtt-count 2000] [--iperf-seconds 5] [--json FILE]

Two topologies side by side (Tests/E2E/netns.py): "direct" (kernel forwarding) and "sluice" (a relay
and `sluice up`, restarted with `--udp-path off` for the carrier rows). nftables drops `--loss` % of
the packets arriving on each end of the client↔relay link (`numgen random`), as the E2E tests do
(a run of UDP path packets sent as one GSO send crosses the veth as one skb and is dropped whole,
which makes iperf3's loss over the path burstier than a real link's).
Measured, each in turns with direct:

- UDP echo, 100 B, one in flight (Tests/E2E/udprtt.py): p50, p99, lost — with the UDP path, and
  with every datagram on the TCP carrier (`--udp-path off`), then the same with the route option
  `rto_min 5ms` on both ends' link routes (a carrier-side setting that bounds TCP's stall);
- TCP 1-byte request/response (TCP_NODELAY, one in flight): p50, p99 — the carrier's stall seen by a
  TCP flow, and the direct TCP flow's own;
- a 16 MiB TCP download (curl): seconds;
- iperf3 -u -b 200M for `--iperf-seconds`: throughput, loss and jitter, at 0 % and at `--loss` %,
  with iperf3's own datagram length (1,460 bytes: too big for the UDP path of a 1,500-byte link, so
  through Sluice they ride the TCP carrier, whose stalls under loss drop what the carrier cannot
  take) and with `-l 1400`, which fits the path.

Prints a table and writes JSON with `--json`. Hold the machine-wide lock while it runs
(`flock /tmp/sluice-e2e.lock …`, see /work/wt/COMMON.md); figures on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "Tests" / "E2E"))

import harness as h  # noqa: E402
import netns  # noqa: E402

TABLE = "sluice_bench_loss"


def set_loss(topo: netns.Topology, percent: float) -> None:
    for ns, dev in ((topo.client, "to-relay"), (topo.relay, "to-client")):
        topo.exec(ns, ["nft", "delete", "table", "inet", TABLE], timeout=10)
        if percent > 0:
            script = (f'table inet {TABLE} {{ chain pre {{ type filter hook prerouting priority -300; '
                      f'iifname "{dev}" numgen random mod 100 < {int(percent)} drop; }}\n}}\n')
            cp = topo.exec(ns, ["nft", "-f", "-"], input=script, timeout=10)
            if cp.returncode != 0:
                raise RuntimeError(f"nft: {cp.stderr}")


def set_rto_min(topo: netns.Topology, value: str | None) -> None:
    """`rto_min` on the link route at both ends (None: the kernel default, 200 ms)."""
    for ns, dev in ((topo.client, "to-relay"), (topo.relay, "to-client")):
        extra = ["rto_min", value] if value else []
        topo.exec(ns, ["ip", "route", "replace", netns.CLIENT_NET_V4, "dev", dev, "proto", "kernel", "scope", "link",
                       "src", netns.CLIENT_V4 if ns == topo.client else netns.RELAY_CLIENT_SIDE_V4, *extra], check=True)


def udp_rtt(topo: netns.Topology, count: int) -> dict:
    cp = topo.exec(topo.client, [h.PY, str(h.HERE / "udprtt.py"), "--host", netns.SERVER_V4, "--port", str(h.UDP_PORT),
                                 "--count", str(count), "--size", "100", "--timeout", "0.5"], timeout=count + 60)
    if cp.returncode != 0:
        raise RuntimeError(f"udprtt.py: {cp.stderr}")
    return json.loads(cp.stdout)


def tcp_rtt(topo: netns.Topology, count: int) -> dict:
    """1-byte TCP round trips to latency.py's server (TCP_NODELAY), one in flight."""
    s = topo.socket(topo.client)
    s.settimeout(10)
    s.connect((netns.SERVER_V4, h.LATENCY_PORT))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"Q" + struct.pack("!II", 1, 1))
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        s.send(b"p")
        if not s.recv(1):
            raise ConnectionError("EOF")
        times.append(time.perf_counter() - t0)
    s.close()
    times.sort()
    return {"p50": times[len(times) // 2], "p99": times[int(0.99 * len(times))], "max": times[-1]}


def download(topo: netns.Topology, mib: int = 16) -> float:
    t0 = time.monotonic()
    r = h.curl(topo, ["-o", "/dev/null", h.url(topo, "ipv4", f"/bytes/{mib << 20}")], max_time=120)
    if not r.ok:
        raise RuntimeError(f"curl {r.returncode}: {r.stderr}")
    return time.monotonic() - t0


# A datagram length that fits the UDP path of a 1,500-byte link (at most 1,429 bytes over IPv4:
# docs/configuration.md, "The UDP path"); iperf3's own default, 1,460, does not, and rides the carrier.
PATH_LENGTH = 1400


def iperf_udp(runner: h.Runner, topo: netns.Topology, seconds: int, length: int | None = None) -> dict:
    """iperf3 -u -b 200M (with `length`: -l LENGTH) against a fresh one-shot server
    (harness.start_iperf3_server: `iperf3 -s -1`, gone after one test); a run that ends in an error
    (its TCP control connection suffers the loss too) is tried again, up to three times."""
    for attempt in range(3):
        server = h.start_iperf3_server(runner, topo, netns.SERVER_V4)
        cp = topo.exec(topo.client, ["iperf3", "-c", netns.SERVER_V4, "-p", str(h.IPERF_PORT), "-u", "-b", "200M",
                                     *(["-l", str(length)] if length else []),
                                     "-t", str(seconds), "-J", "--connect-timeout", "5000"], timeout=seconds + 40)
        server.stop()
        result = json.loads(cp.stdout)
        if "sum" in result.get("end", {}):
            break
        print(f"iperf3 ({topo.mode}): {result.get('error')}; again", flush=True)
        time.sleep(2)
    else:
        raise RuntimeError(f"iperf3 failed three times: {result.get('error')}")
    total = result["end"]["sum"]
    return {"mbps": total["bits_per_second"] / 1e6, "lost_percent": total["lost_percent"], "jitter_ms": total["jitter_ms"],
            "packets": total["packets"]}


def start_client(runner: h.Runner, topo, relay_key, client_key, udp_path: str) -> h.Proc:
    proc = runner.start("client", h.client_argv(f"{netns.RELAY_CLIENT_SIDE_V4}:{h.RELAY_PORT}", relay_key.public, client_key,
                                                extra=["--udp-path", udp_path]), ns=topo.client)
    h.wait_client_up(topo, proc)
    h.wait_for(lambda: h.curl(topo, ["-o", "/dev/null", h.url(topo, "ipv4", "/bytes/1")], max_time=2).ok, 15,
               interval=0.2, what="a first request")
    udp_rtt(topo, 20)  # a mapping: the path validates for it
    time.sleep(1)
    return proc


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loss", type=float, default=1)
    ap.add_argument("--rtt-count", type=int, default=2000)
    ap.add_argument("--iperf-seconds", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="sluice-lossy-"))
    runner = h.Runner(work)
    sluice, direct = netns.Topology(tag="bench"), netns.Topology(mode="kernel", tag="bench")
    rows: list[tuple[str, str, str]] = []
    out: dict = {"loss_percent": args.loss}

    def row(what: str, d, s) -> None:
        rows.append((what, d, s))
        print(f"{what:<58} {d:>22} {s:>22}", flush=True)

    try:
        for topo in (sluice, direct):
            topo.create()
            h.start_servers(runner, topo, pregen_mib=16)
            h.start_latency_server(runner, topo)
        relay_key, client_key = h.make_keypair(work, "relay"), h.make_keypair(work, "client")
        relay = runner.start("relay", h.relay_argv(relay_key, [client_key.public]), ns=sluice.relay)
        h.wait_relay_listening(sluice, relay)
        client = start_client(runner, sluice, relay_key, client_key, "auto")
        print(f"{'':<58} {'direct':>22} {'sluice':>22}")
        fmt_rtt = lambda r: f"{r['p50'] * 1e6:.0f}/{r['p99'] * 1e6:.0f} µs {r['lost']} lost"  # noqa: E731
        for loss in (0, args.loss):
            set_loss(sluice, loss)
            set_loss(direct, loss)
            fmt = lambda r: f"{r['mbps']:.0f} Mb/s {r['lost_percent']:.2f}% {r['jitter_ms']:.3f} ms"
            d, s = iperf_udp(runner, direct, args.iperf_seconds), iperf_udp(runner, sluice, args.iperf_seconds)
            out[f"iperf_udp_{loss}"] = {"direct": d, "sluice": s}
            row(f"iperf3 -u -b 200M, {loss} % loss: rate, loss, jitter", fmt(d), fmt(s))
            d, s = (iperf_udp(runner, direct, args.iperf_seconds, PATH_LENGTH),
                    iperf_udp(runner, sluice, args.iperf_seconds, PATH_LENGTH))
            out[f"iperf_udp_{PATH_LENGTH}_{loss}"] = {"direct": d, "sluice": s}
            row(f"… -l {PATH_LENGTH} (fits the UDP path), {loss} % loss", fmt(d), fmt(s))
            if loss == 0:  # the tail without loss, to set beside the rows under loss
                d, s = udp_rtt(direct, args.rtt_count), udp_rtt(sluice, args.rtt_count)
                out["udp_path_no_loss"] = {"direct": d, "sluice": s}
                row("UDP echo p50/p99, 0 % loss, UDP path", fmt_rtt(d), fmt_rtt(s))
        d, s = udp_rtt(direct, args.rtt_count), udp_rtt(sluice, args.rtt_count)
        out["udp_path"] = {"direct": d, "sluice": s}
        row(f"UDP echo p50/p99, {args.loss} % loss, UDP path", fmt_rtt(d), fmt_rtt(s))
        fmt_tcp = lambda r: f"{r['p50'] * 1e6:.0f}/{r['p99'] * 1e6:.0f} µs"
        d, s = tcp_rtt(direct, args.rtt_count), tcp_rtt(sluice, args.rtt_count)
        out["tcp_rtt"] = {"direct": d, "sluice": s}
        row(f"TCP 1-byte p50/p99, {args.loss} % loss", fmt_tcp(d), fmt_tcp(s))
        d, s = download(direct), download(sluice)
        out["download_16mib"] = {"direct": d, "sluice": s}
        row(f"16 MiB TCP download, {args.loss} % loss", f"{d:.2f} s", f"{s:.2f} s")

        client.stop()
        client = start_client(runner, sluice, relay_key, client_key, "off")
        d, s = udp_rtt(direct, args.rtt_count), udp_rtt(sluice, args.rtt_count)
        out["udp_carrier"] = {"direct": d, "sluice": s}
        row(f"UDP echo p50/p99, {args.loss} % loss, --udp-path off", fmt_rtt(d), fmt_rtt(s))
        d, s = iperf_udp(runner, direct, args.iperf_seconds), iperf_udp(runner, sluice, args.iperf_seconds)
        out["iperf_udp_carrier"] = {"direct": d, "sluice": s}
        row(f"iperf3 -u -b 200M, {args.loss} % loss, --udp-path off", fmt(d), fmt(s))
        for value in ("5ms",):
            set_rto_min(sluice, value)
            set_rto_min(direct, value)
            client.stop()
            client = start_client(runner, sluice, relay_key, client_key, "off")  # new carriers take the route's value
            d, s = udp_rtt(direct, args.rtt_count), udp_rtt(sluice, args.rtt_count)
            out[f"udp_carrier_rto_min_{value}"] = {"direct": d, "sluice": s}
            row(f"UDP echo p50/p99, {args.loss} % loss, off, rto_min {value}", fmt_rtt(d), fmt_rtt(s))
            d, s = tcp_rtt(direct, args.rtt_count), tcp_rtt(sluice, args.rtt_count)
            out[f"tcp_rtt_rto_min_{value}"] = {"direct": d, "sluice": s}
            row(f"TCP 1-byte p50/p99, {args.loss} % loss, rto_min {value}", fmt_tcp(d), fmt_tcp(s))
    finally:
        runner.close()
        for topo in (sluice, direct):
            topo.destroy()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
