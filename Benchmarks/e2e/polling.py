"""The polling modes of the latency rounds: floor and Sluice again, their event loops polling before
they sleep.

    floor-poll    floor, both forwarders with --spin-us 200
    sluice-poll   sluice, `up` and `relay` with --busy-poll 200, the relay with --workers 1

A one-in-flight round trip through two user-space hops pays for waking each hop's process, which
kernel forwarding never does (Benchmarks/README.md, "The floor modes"). A loop that keeps polling epoll
for a while after traffic pays for no wake-up when the next packet comes meanwhile: what busy polling
takes off each latency, for the floor and for Sluice, is what these modes show beside the sleeping ones
in the same run. Where floor-poll misses a latency target too, no two-hop user-space design meets it
here, however it waits; where sluice-poll meets one that sluice misses, the flag meets it at the cost
of a CPU kept busy (docs/configuration.md, "Busy polling").

The relay polls on one worker: with its default of one worker per CPU, three polling threads on this
bench's two vCPUs left no CPU for the test's client and server, and a new socket's round trip took
336 µs against 125 (issue 17's note of 2026-12-04). The modes run only in the latency rounds
(paired.LATENCY), not in the main pass: they are a question about latency, and their loaded rates are
lower by design (the polling loop takes a CPU the load would use).
"""

from __future__ import annotations

import dataclasses

# µs: with this window on both ends Sluice's UDP round trip took kernel forwarding's time
# (docs/configuration.md, "Busy polling").
POLL_US = "200"
FLOORS = ("floor-poll",)  # the polling modes that are floors: judged as floors are (metrics.floors_missing)
SLUICE = "sluice-poll"  # the one that is Sluice: the verdicts say whether it meets a target (metrics.polled_verdict)
MODES = (*FLOORS, SLUICE)
BASE = {"floor-poll": "floor", "sluice-poll": "sluice"}  # the mode each one runs, with the arguments below


def base(mode: str) -> str:
    """The mode that `mode` runs: itself, or for a polling mode the one it polls in."""
    return BASE.get(mode, mode)


def settings(mode: str, s):
    """`s` (measure.Settings) with the polling mode's arguments in place of any the run gave for the same
    options (`sluice` refuses an option given twice; forward.c takes the last); `s` itself for every
    other mode."""
    if mode == "floor-poll":
        return dataclasses.replace(s, floor_args=[*without(s.floor_args, "--spin-us"), "--spin-us", POLL_US])
    if mode == "sluice-poll":
        return dataclasses.replace(
            s, client_args=[*without(s.client_args, "--busy-poll"), "--busy-poll", POLL_US],
            relay_args=[*without(s.relay_args, "--busy-poll", "--workers"), "--busy-poll", POLL_US, "--workers", "1"])
    return s


def without(args: list[str], *options: str) -> list[str]:
    """`args` less each of `options` and its value, given as `--opt VALUE` or `--opt=VALUE`."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in options:
            skip = True
        elif not a.startswith(tuple(f"{o}=" for o in options)):
            out.append(a)
    return out
