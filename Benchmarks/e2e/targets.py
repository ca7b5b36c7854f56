"""A figure's target, and its verdict, judged against the same run's other modes.

This VM runs at different speeds on different days (a run at half its usual speed failed every
absolute throughput target while every ratio held), so a target is a ratio to a figure of the same run:
the ceiling (kernel), a floor (floor, floor-aead), a peer (wireguard-go, openvpn) or another figure of
Sluice itself. Only the memory targets are absolute: bytes do not depend on the CPU's speed.

    Target(">=", 0.95, "floor-aead")                 ≥ 95 % of floor-aead's figure
    Target("<=", 1.6, "kernel")                      at most 1.6 × the ceiling's (a latency)
    Target(">=", 0.95, "sluice", "tcp1_up_gbps")     ≥ 95 % of Sluice's own one-stream figure
    Target(">=", 1.0, PEERS)                         at least the better peer's
    Target("<=", 2.0)                                absolute: at most 2
"""

from __future__ import annotations

from dataclasses import dataclass

from peers import MODES as PEER_MODES

PEERS = "peers"  # `against` for "the best of the peers that ran": the highest rate, the lowest cost
OPS = {">=": lambda v, t: v >= t, ">": lambda v, t: v > t, "<=": lambda v, t: v <= t, "<": lambda v, t: v < t}
SIGN = {">=": "≥", ">": ">", "<=": "≤", "<": "<"}


@dataclass(frozen=True)
class Target:
    op: str  # one of OPS
    factor: float  # times the reference figure; the value itself when `against` is None
    against: str | None = None  # a mode of the run, PEERS, or None for an absolute target
    key: str | None = None  # the reference figure's key; None: the same figure as the one judged

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"target operator {self.op!r}: one of {', '.join(OPS)}")

    def reference(self, key: str, figures: dict[str, dict]) -> tuple[str | None, float | None]:
        """(the mode whose figure sets the target, that figure) in a run's figures (mode → key → value);
        (None, None) when the run has none."""
        if self.against is None:
            return None, None
        ref_key = self.key or key
        if self.against == PEERS:
            found = [(m, figures[m][ref_key]) for m in PEER_MODES if figures.get(m, {}).get(ref_key) is not None]
            if not found:
                return None, None
            pick = max if self.op.startswith(">") else min  # the better peer: faster, or cheaper
            return pick(found, key=lambda mv: mv[1])
        value = figures.get(self.against, {}).get(ref_key)
        return (self.against, value) if value is not None else (None, None)

    def threshold(self, key: str, figures: dict[str, dict]) -> float | None:
        """The value the figure is judged against in this run; None when the reference did not run."""
        if self.against is None:
            return self.factor
        _, ref = self.reference(key, figures)
        return None if ref is None else self.factor * ref

    def verdict(self, key: str, value: float | None, figures: dict[str, dict]) -> str:
        """'pass', 'FAIL', or '–' when the figure or its reference is missing."""
        t = self.threshold(key, figures)
        if value is None or t is None:
            return "–"
        return "pass" if OPS[self.op](value, t) else "FAIL"

    def text(self, key: str, figures: dict[str, dict], fmt=lambda v: f"{v:,.2f}") -> str:
        """'≥ 95% of floor-aead (4.40)', '≤ 1.6× kernel (149)', '≥ best peer (10,981)', '≤ 2'."""
        sign = SIGN[self.op]
        if self.against is None:
            return f"{sign} {self.factor:,g}"
        if self.against == PEERS:
            whose = "best peer"
        elif self.against == "sluice" and self.key:
            whose = {"tcp1_up_gbps": "1 stream", "tcp1_down_gbps": "1 stream"}.get(self.key, self.key)
        else:
            whose = self.against
        if self.factor == 1:
            head = f"{sign} {whose}"
        elif self.op.startswith(">"):
            head = f"{sign} {self.factor:.0%} of {whose}"
        else:
            head = f"{sign} {self.factor:g}× {whose}"
        mode, _ = self.reference(key, figures)
        t = self.threshold(key, figures)
        if t is None:
            return f"{head} (not in this run)"
        return f"{head} ({fmt(t)}{', ' + mode if self.against == PEERS else ''})"
