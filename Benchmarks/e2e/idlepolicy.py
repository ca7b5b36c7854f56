"""How this machine's idle CPUs wait, which sets what every wake-up of a sleeping process costs.

A tunnel's ends sleep in epoll_wait between packets, and the packet that wakes one waits for its CPU to
leave idle. On a KVM guest with the haltpoll cpuidle driver an idle vCPU first polls, for up to
guest_halt_poll_ns (the driver's default 200,000, grown and shrunk by its governor), and only then
halts; a halted vCPU is woken by an interrupt through the hypervisor. Where no cpuidle driver is
registered (sysfs says "none"), the kernel's own idle loop halts at once, and guest_halt_poll_ns, still
in sysfs where the haltpoll driver is built in, changes nothing: whether the hypervisor polls for the
halted vCPU is the host's setting, which a guest cannot read. One request in flight through Sluice wakes
each of its ends twice where kernel forwarding wakes neither, so the one-in-flight latencies of
`make bench` depend on this setting more than on anything in the tunnel (Benchmarks/README.md, "Idle CPUs").

bench.py keeps the policy in its JSON (machine.idle) and prints it under its header, hops.py in its
header; `hops.py --guest-halt-poll-ns N` measures under another setting and puts back the one it found.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

SYS = Path("/sys")
CPUIDLE = "devices/system/cpu/cpuidle"
HALT_POLL = "module/haltpoll/parameters/guest_halt_poll_ns"
HALTPOLL = "haltpoll"  # the one cpuidle driver that reads guest_halt_poll_ns
NO_DRIVER = "none"  # what current_driver says where no cpuidle driver is registered


def _text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def read(root: Path = SYS) -> dict:
    """The cpuidle driver and governor, and guest_halt_poll_ns where the haltpoll driver is loaded
    (None elsewhere: bare metal, other hypervisors)."""
    governor = _text(root / CPUIDLE / "current_governor_ro") or _text(root / CPUIDLE / "current_governor")
    poll = _text(root / HALT_POLL)
    driver = _text(root / CPUIDLE / "current_driver")
    return {"driver": None if driver == NO_DRIVER else driver, "governor": governor,
            "guest_halt_poll_ns": int(poll) if poll is not None and poll.isdigit() else None}


def describe(policy: dict) -> str:
    """One line for a report's header."""
    if not policy.get("driver"):
        return "idle CPUs: no cpuidle driver: the kernel's own idle loop halts an idle CPU at once"
    line = f"idle CPUs: cpuidle driver {policy['driver']}, governor {policy.get('governor') or 'unknown'}"
    ns = policy.get("guest_halt_poll_ns")
    if ns is None or policy["driver"] != HALTPOLL:
        return line
    if ns == 0:
        return line + "; guest halt polling off (guest_halt_poll_ns 0): an idle vCPU halts at once"
    return line + f"; an idle vCPU polls up to {ns / 1000:g} µs before it halts (guest_halt_poll_ns {ns})"


@contextlib.contextmanager
def guest_halt_polling(ns: int, root: Path = SYS) -> Iterator[int]:
    """Sets guest_halt_poll_ns to `ns` for the block and puts back the value it found, also when the
    block raises. Yields the value found. RuntimeError where the haltpoll driver is not loaded."""
    path = root / HALT_POLL
    found = _text(path)
    if found is None or not found.isdigit():
        raise RuntimeError(f"{path} is not here: the haltpoll cpuidle driver (KVM guests) is not loaded")
    driver = read(root)["driver"]
    if driver != HALTPOLL:
        raise RuntimeError(f"the haltpoll cpuidle driver is not in use here (cpuidle driver: {driver or 'none'}), "
                           f"so guest_halt_poll_ns would change nothing")
    path.write_text(f"{ns}\n")
    try:
        yield int(found)
    finally:
        path.write_text(f"{found}\n")
