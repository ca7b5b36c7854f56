"""A private mount namespace inside a test's network namespace, so `sluice up --route-all` can
rewrite "/etc/resolv.conf" without touching this machine's own.

The holder process (`unshare --mount`, then `sleep`) bind-mounts a copy of a resolv.conf the test
writes over /etc/resolv.conf and mounts an empty tmpfs over /run (so Sluice's state file,
/run/sluice/<tun>.json, lives and dies with the jail). Everything that must see that view (`sluice
up`, `sluice down`, `getent`, `cat /etc/resolv.conf`) runs through `nsenter` into the holder's mount
and network namespaces. Mount propagation is private, so nothing leaks back; killing the holder (by
its pid) ends the namespace and its mounts.

The jail refuses to start unless /etc/resolv.conf is a regular file: a bind mount over a symbolic
link would land on the link's target, and Sluice replaces a link through a rename in /etc, which is
the machine's own directory.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Sequence

import harness as h


def host_resolv_fingerprint() -> tuple:
    """What the machine's own /etc/resolv.conf is: the tests assert it never changes."""
    st = os.lstat("/etc/resolv.conf")
    data = b"" if os.path.islink("/etc/resolv.conf") else Path("/etc/resolv.conf").read_bytes()
    return (st.st_mode, st.st_ino, st.st_uid, st.st_gid, hashlib.sha256(data).hexdigest())


class NamespaceJail:
    """A `sleep` kept in private namespaces; commands run inside it through nsenter. A subclass starts
    `proc` with a shell script that prints "ready" once its mounts are in place."""

    proc: subprocess.Popen
    #: The default time a command inside may take.
    run_timeout: float = 20

    def _await_ready(self, what: str) -> None:
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.close()
            raise RuntimeError(f"{what} did not start: {line!r} {self.proc.stderr.read() if self.proc.stderr else ''}")

    def argv(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside the jail's mount and network namespaces."""
        return ["nsenter", "-t", str(self.proc.pid), "-m", "-n", "--", *argv]

    def run(self, argv: Sequence[str], timeout: float | None = None,
            input: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(argv), capture_output=True, text=True, input=input,
                              timeout=self.run_timeout if timeout is None else timeout, env=h.clean_env())

    def resolv(self) -> str:
        """/etc/resolv.conf as the jail sees it."""
        return self.run(["cat", "/etc/resolv.conf"]).stdout

    def state_files(self) -> list[str]:
        """What is in the jail's own /run/sluice."""
        return self.run(["sh", "-c", "ls -A /run/sluice 2>/dev/null || true"]).stdout.split()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)
        for f in (self.proc.stdout, self.proc.stderr):
            if f:
                f.close()


class MountJail(NamespaceJail):
    def __init__(self, ns: str, workdir: Path, resolv_text: str) -> None:
        if os.path.islink("/etc/resolv.conf") or not os.path.isfile("/etc/resolv.conf"):
            raise RuntimeError("/etc/resolv.conf is not a regular file here; the resolver tests cannot isolate it")
        self.copy = workdir / "jail-resolv.conf"
        self.copy.write_text(resolv_text)
        self.copy.chmod(0o644)
        self.original_text = resolv_text
        script = (
            "set -e; "
            f"mount --bind '{self.copy}' /etc/resolv.conf; "
            "mount -t tmpfs -o mode=0755 sluice-e2e-run /run; "
            "echo ready; exec sleep 100000"
        )
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, "unshare", "--mount", "--propagation", "private",
                                      "--", "sh", "-c", script],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._await_ready("mount jail")
        # The premise: inside, /etc/resolv.conf is the copy, and a mount point of its own.
        inside = self.run(["findmnt", "-n", "-o", "TARGET", "/etc/resolv.conf"]).stdout.strip()
        if inside != "/etc/resolv.conf" or self.resolv() != resolv_text:
            self.close()
            raise RuntimeError("mount jail: /etc/resolv.conf is not the bind-mounted copy inside")

    def resolv(self) -> str:
        return self.run(["cat", "/etc/resolv.conf"]).stdout



class FileJail(NamespaceJail):
    """A `sleep` in network namespace `ns` and a private mount namespace in which each file of
    `files` (path inside → text) is a copy of the test's, bind-mounted over the machine's: an
    /etc/hosts only a process in the jail sees, say."""

    def __init__(self, ns: str, workdir: Path, files: dict[str, str]) -> None:
        mounts = []
        for i, (target, text) in enumerate(files.items()):
            copy = workdir / f"jail-file-{i}"
            copy.write_text(text)
            copy.chmod(0o644)
            mounts.append(f"mount --bind '{copy}' '{target}'")
        script = "set -e; " + "; ".join(mounts) + "; echo ready; exec sleep 100000"
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, "unshare", "--mount", "--propagation", "private",
                                      "--", "sh", "-c", script],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._await_ready("file jail")
