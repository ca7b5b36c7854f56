"""Paired rounds: one-stream iperf3 through floor-aead and through Sluice in alternating turns.

The verdicts that set Sluice against floor-aead (one stream each way at ≥ 95 % of floor-aead's
Gbit/s, at ≤ 1.05 × its CPU per GB: issue 17) compare two modes. In the main pass the two run minutes
apart, each under whatever other work this shared VM had then, and one such comparison moves by
±12 %: the same commit measured 66 % and 80 % of floor-aead in two runs back to back. So the bench
then runs both again, in turns (floor-aead, Sluice, Sluice, floor-aead, …: the ABBA order cancels a
steady drift in load), each turn in namespaces of its own, and judges the median of each mode's
rounds. ab.py measures two Sluice binaries the same way.

A turn during which the host took hoststeal.NOTABLE % or more of the VM (steal, hoststeal.py) is run
once more and the turn that lost less is kept: such a turn measures the host's other guests as much as
the mode. In one run on 00ba4db the host took 36, 36 and 5 % of Sluice's turns, which carried 0.79,
0.95 and 3.45 Gbit/s up, and 35, 13 and 8 % of floor-aead's (1.86, 3.43, 3.42). What the replaced
turns lost stays in the samples (`replaced_steal_pct`).

    samples, errors = paired.run(3, settings, workdir, loadgen, say, forward)
    figures = paired.medians(samples)     # {"sluice": {"tcp1_up_paired_gbps": …}, "floor-aead": {…}}
"""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path
from typing import Callable

import hoststeal
import measure

MODES = ("floor-aead", "sluice")
# A figure of the main pass → the key of its paired median.
PAIRED = {
    "tcp1_up_gbps": "tcp1_up_paired_gbps",
    "tcp1_down_gbps": "tcp1_down_paired_gbps",
    "cpu_up_s_per_gb": "cpu_up_paired_s_per_gb",
    "cpu_down_s_per_gb": "cpu_down_paired_s_per_gb",
    "host_steal_pct": "host_steal_paired_pct",  # how much of each turn the host took (hoststeal.py)
}
TURN_SECONDS = 5.0  # each turn's iperf3 runs; at most the main pass's
REPLACED = "replaced_steal_pct"  # samples' key for what the turns run again had lost


def wanted(modes: list[str], groups: tuple) -> bool:
    """Whether a run with these modes and test groups has pairs to run."""
    return "iperf" in groups and all(m in modes for m in MODES)


def order(rounds: int) -> list[str]:
    """The turns of `rounds` rounds: floor-aead, sluice, then sluice, floor-aead, and so on."""
    turns: list[str] = []
    for r in range(rounds):
        turns += list(MODES) if r % 2 == 0 else list(reversed(MODES))
    return turns


def turn_settings(s: measure.Settings) -> measure.Settings:
    """The main pass's settings cut to one stream up and down, for at most TURN_SECONDS each."""
    return dataclasses.replace(s, groups=("iperf",), iperf_streams=(1,), iperf_seconds=min(s.iperf_seconds, TURN_SECONDS))


def run(rounds: int, s: measure.Settings, workdir: Path, loadgen: Path, say: Callable[[str], None],
        forward: Path | None) -> tuple[dict[str, dict[str, list[float]]], dict[str, str]]:
    """Runs the turns; returns each mode's figures by turn (mode → key → values, main-pass keys, and
    REPLACED: the steal of each turn run again and not kept) and the errors of the kept turns that
    failed (a failed turn adds no figure)."""
    samples: dict[str, dict[str, list[float]]] = {m: {k: [] for k in (*PAIRED, REPLACED)} for m in MODES}
    errors: dict[str, str] = {}
    ts = turn_settings(s)
    for i, mode in enumerate(order(rounds)):
        say(f"bench: paired round {i // 2 + 1}/{rounds}, {mode}")
        result = measure.ModeRun(mode, ts, workdir / f"paired-{i + 1}", loadgen, say, forward).run()
        lost = result["figures"].get("host_steal_pct")
        if lost is not None and lost >= hoststeal.NOTABLE:
            say(f"bench: the host took {lost:.0f} % of the VM during that turn: {mode} runs it once more")
            again = measure.ModeRun(mode, ts, workdir / f"paired-{i + 1}-again", loadgen, say, forward).run()
            lost_again = again["figures"].get("host_steal_pct")
            # A second turn that failed (no figures) or lost as much leaves the first one in place.
            kept, replaced = (again, result) if lost_again is not None and lost_again < lost else (result, again)
            result = kept
            if replaced["figures"].get("host_steal_pct") is not None:
                samples[mode][REPLACED].append(replaced["figures"]["host_steal_pct"])
        for key in PAIRED:
            value = result["figures"].get(key)
            if value is not None:
                samples[mode][key].append(value)
        errors.update({f"paired turn {i + 1} ({mode}) {k}": v for k, v in result["errors"].items()})
    return samples, errors


def medians(samples: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    """Each mode's median of each figure under its paired key; figures no turn produced are left out."""
    return {mode: {PAIRED[key]: statistics.median(values) for key, values in keys.items() if values and key in PAIRED}
            for mode, keys in samples.items()}
