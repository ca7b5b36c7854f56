"""OpenSSH for the tests: Debian's sshd in a server namespace, and the ssh command that logs in to it.

Keys (a host key, a client key) are made in the test's temporary directory; sshd runs as root in
the foreground (`-D -e`, its log on stderr) with a config of its own on SSHD_PORT, key login only.
Its privilege separation directory must be /run/sshd, so it runs in a mount namespace of its own
with a tmpfs over /run: nothing is made in the machine's /run, and the mounts end with sshd.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import harness as h
from netns import Topology

SSHD_PORT = 2222


@dataclass
class SshKeys:
    directory: Path
    host_key: Path
    client_key: Path
    authorized_keys: Path
    config: Path


def make_keys(workdir: Path) -> SshKeys:
    """Host and client keys, authorized_keys and sshd_config in `workdir`/ssh."""
    d = workdir / "ssh"
    d.mkdir(mode=0o700)
    host, client = d / "host_key", d / "client_key"
    for key in (host, client):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True,
                       capture_output=True, timeout=20)
    authorized = d / "authorized_keys"
    authorized.write_text(Path(f"{client}.pub").read_text())
    config = d / "sshd_config"
    config.write_text("\n".join([
        f"Port {SSHD_PORT}", f"HostKey {host}", f"AuthorizedKeysFile {authorized}", "PidFile none",
        "UsePAM no", "StrictModes no", "PermitRootLogin prohibit-password", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UseDNS no", "LogLevel VERBOSE", ""]))
    return SshKeys(d, host, client, authorized, config)


def start_sshd(runner: h.Runner, topo: Topology, keys: SshKeys) -> h.Proc:
    """sshd in the server namespace, listening on SSHD_PORT on every address."""
    script = f"mount -t tmpfs none /run && mkdir -m 755 /run/sshd && exec /usr/sbin/sshd -D -e -f {keys.config}"
    proc = runner.start("sshd", ["unshare", "--mount", "--propagation", "private", "sh", "-c", script], ns=topo.server)

    def listening() -> bool:
        if not proc.alive():
            raise RuntimeError(f"sshd exited {proc.popen.returncode}:\n{h.tail(proc.log)}")
        return bool(topo.exec(topo.server, ["ss", "-Htln", f"sport = :{SSHD_PORT}"], timeout=5).stdout.strip())

    h.wait_for(listening, 10, what="sshd to listen")
    return proc


def ssh_argv(keys: SshKeys, host: str, *command: str) -> list[str]:
    """ssh as root to `host`, with nothing from the machine's own ssh configuration or known hosts."""
    return ["ssh", "-F", "/dev/null", "-i", str(keys.client_key), "-o", "IdentitiesOnly=yes",
            "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
            "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10", "-p", str(SSHD_PORT), f"root@{host}", *command]


def timed_ssh(topo: Topology, keys: SshKeys, host: str, *command: str) -> float:
    """Runs ssh from the client namespace; returns its wall time in seconds, raising if it failed."""
    t0 = time.monotonic()
    cp = topo.exec(topo.client, ssh_argv(keys, host, *command), timeout=30)
    elapsed = time.monotonic() - t0
    if cp.returncode != 0:
        raise RuntimeError(f"ssh exited {cp.returncode}: {cp.stderr.strip()}")
    return elapsed
