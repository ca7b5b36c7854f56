"""A real systemd-resolved and a real D-Bus system bus inside a test's client namespace, so `sluice up`
can drive resolved over D-Bus without touching this machine's resolver.

The systemd-resolved package is never installed here (its install step would point /etc/resolv.conf
at a stub that does not run on this machine): `debian_packages()` downloads Debian's systemd-resolved
and libnss-resolve with `apt-get download` — the version of the installed libsystemd-shared, whose
private library the daemon links — and unpacks them with `dpkg-deb -x` into .build/e2e-cache (ignored
by git, kept between runs).

`ResolvedJail` is a mount jail (mountns.py) that also runs, inside the client's network namespace
and its own private mount namespace:
- a tmpfs over /run, with resolved's settings as a drop-in in /run/systemd/resolved.conf.d (no
  fallback servers, no LLMNR or mDNS: only what the test configures is ever asked);
- /etc/passwd and /etc/group bind-mounted with a `systemd-resolve` user added, the user resolved
  drops to;
- a copy of resolv.conf bind-mounted over /etc/resolv.conf (127.0.0.53 for the stub);
- `dbus-daemon` with a system-bus configuration that includes resolved's bus policy, listening on
  /run/dbus/system_bus_socket, and `systemd-resolved` itself.

Both daemons are the jail holder's children and are killed by their pids in `close()`, before the
holder. Nothing is written outside the test's work directory and the cache.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from pathlib import Path

import harness as h
import mountns

CACHE = h.REPO / ".build" / "e2e-cache"
PACKAGES = ("systemd-resolved", "libnss-resolve")

BUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=/run/dbus/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
  <includedir>{root}/usr/share/dbus-1/system.d</includedir>
</busconfig>
"""

RESOLVED_CONF = """[Resolve]
FallbackDNS=
LLMNR=no
MulticastDNS=no
DNSSEC=no
DNSOverTLS=no
Cache=no
"""


def debian_packages() -> Path:
    """The unpacked systemd-resolved and libnss-resolve (one root directory), downloaded once at the
    installed libsystemd-shared's version. Raises RuntimeError with apt's words when that fails."""
    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libsystemd-shared"],
                             capture_output=True, text=True).stdout.strip()
    if not version:
        raise RuntimeError("libsystemd-shared is not installed (scripts/deps.sh installs it)")
    root = CACHE / f"systemd-resolved-{version}"
    if (root / ".complete").exists():
        return root
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel runs share the cache
        if (root / ".complete").exists():
            return root
        downloads = CACHE / f"debs-{version}"
        downloads.mkdir(exist_ok=True)
        wanted = [f"{p}={version}" for p in PACKAGES]
        cp = subprocess.run(["apt-get", "download", *wanted], cwd=downloads, capture_output=True, text=True, timeout=300)
        if cp.returncode != 0:
            # The package lists may predate this version: refresh them once.
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True, text=True, timeout=300)
            cp = subprocess.run(["apt-get", "download", *wanted], cwd=downloads, capture_output=True, text=True, timeout=300)
        if cp.returncode != 0:
            raise RuntimeError(f"apt-get download {' '.join(wanted)} failed: {cp.stderr.strip()}")
        root.mkdir(exist_ok=True)
        for deb in sorted(downloads.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True, capture_output=True, timeout=120)
        (root / ".complete").write_text(version + "\n")
    return root


def _free_id(path: str, taken_from: int = 990) -> int:
    used = {int(line.split(":")[2]) for line in Path(path).read_text().splitlines() if line.count(":") >= 3}
    n = taken_from
    while n in used:
        n -= 1
    return n


class ResolvedJail(mountns.NamespaceJail):
    """The client namespace with its own resolved and system bus (see the module doc)."""

    def __init__(self, ns: str, workdir: Path, resolv_text: str, root: Path) -> None:
        if os.path.islink("/etc/resolv.conf") or not os.path.isfile("/etc/resolv.conf"):
            raise RuntimeError("/etc/resolv.conf is not a regular file here; the resolver tests cannot isolate it")
        self.root = root
        self.workdir = workdir
        self.pids: dict[str, int] = {}
        jail = workdir / "resolved-jail"
        jail.mkdir()
        uid = _free_id("/etc/passwd")
        gid = _free_id("/etc/group")
        (jail / "passwd").write_text(Path("/etc/passwd").read_text()
                                     + f"systemd-resolve:x:{uid}:{gid}::/run/systemd/resolve:/usr/sbin/nologin\n")
        (jail / "group").write_text(Path("/etc/group").read_text() + f"systemd-resolve:x:{gid}:\n")
        (jail / "bus.conf").write_text(BUS_CONF.format(root=root))
        (jail / "resolved.conf").write_text(RESOLVED_CONF)
        (jail / "resolv.conf").write_text(resolv_text)
        (jail / "nsswitch-resolve.conf").write_text(Path("/etc/nsswitch.conf").read_text().replace(
            "\nhosts:", "\nhosts: resolve [!UNAVAIL=return] #", 1))
        for f in jail.iterdir():
            f.chmod(0o644)
        jail.chmod(0o755)
        self.jail_dir = jail
        script = f"""
set -e
mount -t tmpfs -o mode=0755 sluice-e2e-run /run
mkdir -p /run/dbus /run/systemd/resolved.conf.d
cp '{jail}/resolved.conf' /run/systemd/resolved.conf.d/e2e.conf
mount --bind '{jail}/passwd' /etc/passwd
mount --bind '{jail}/group' /etc/group
mount --bind '{jail}/resolv.conf' /etc/resolv.conf
dbus-daemon --config-file='{jail}/bus.conf' --nofork --nopidfile >'{jail}/dbus.log' 2>&1 &
echo "dbus $!"
n=0; while [ ! -S /run/dbus/system_bus_socket ]; do sleep 0.02; n=$((n+1)); [ $n -lt 250 ] || {{ echo "no bus socket"; exit 1; }}; done
SYSTEMD_LOG_LEVEL=debug '{root}/lib/systemd/systemd-resolved' >'{jail}/resolved.log' 2>&1 &
echo "resolved $!"
n=0; until '{root}/usr/bin/resolvectl' status >/dev/null 2>&1; do sleep 0.02; n=$((n+1)); [ $n -lt 250 ] || {{ echo "resolved did not answer"; exit 1; }}; done
echo ready
exec sleep 100000
"""
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, "unshare", "--mount", "--propagation", "private",
                                      "--", "sh", "-c", script],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while True:
            line = self.proc.stdout.readline().strip()
            name, _, pid = line.partition(" ")
            if name in ("dbus", "resolved") and pid.isdigit():
                self.pids[name] = int(pid)
                continue
            if line != "ready":
                self.close()
                raise RuntimeError(f"resolved jail did not start: {line!r} {self.proc.stderr.read()} "
                                   f"{h.tail(jail / 'resolved.log', 10)}")
            break

    @property
    def logs(self) -> dict[str, Path]:
        return {"dbus-daemon": self.jail_dir / "dbus.log", "systemd-resolved": self.jail_dir / "resolved.log"}

    def resolvectl(self, *args: str, timeout: float = 20) -> subprocess.CompletedProcess:
        return self.run([str(self.root / "usr/bin/resolvectl"), *args], timeout=timeout)

    def status(self) -> str:
        """`resolvectl status` with the lines that change by themselves (current server) left out."""
        out = self.resolvectl("status", "--no-pager").stdout
        return "\n".join(l for l in out.splitlines() if "Current DNS Server" not in l)

    def getent_nss_resolve(self, *args: str, timeout: float = 20) -> subprocess.CompletedProcess:
        """`getent ARGS` with nss-resolve first on the hosts line (from the unpacked libnss-resolve):
        glibc asks resolved over its varlink socket, as Fedora's default hosts line does."""
        script = (f"mount --bind '{self.jail_dir}/nsswitch-resolve.conf' /etc/nsswitch.conf && "
                  f"LD_LIBRARY_PATH='{self.root}/usr/lib/x86_64-linux-gnu' exec getent \"$@\"")
        return self.run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "getent", *args],
                        timeout=timeout)

    def alive(self) -> bool:
        return self.proc.poll() is None and all(_alive(pid) for pid in self.pids.values())

    def close(self) -> None:
        for name in ("resolved", "dbus"):
            pid = self.pids.get(name)
            if pid is not None and _alive(pid):
                os.kill(pid, 15)
                deadline = time.monotonic() + 3
                while _alive(pid) and time.monotonic() < deadline:
                    time.sleep(0.02)
                if _alive(pid):
                    os.kill(pid, 9)
        super().close()


def _alive(pid: int) -> bool:
    """Alive and not a zombie (the jail's holder, a `sleep`, never reaps its children)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

