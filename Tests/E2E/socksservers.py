"""Real SOCKS5 servers from Debian in the relay namespace, for `sluice up --upstream`: dante-server
(`danted`: CONNECT and UDP ASSOCIATE, with or without RFC 1929 username/password) and microsocks
(CONNECT only). Both listen on the relay's client-side address and reach the server namespace from
the relay's server-side address, as a Sluice relay would.

danted checks a username/password against the system's password database (getpwnam, then crypt of
the shadow entry). So that no user is added to this machine, the password-checking danted runs in
a private mount namespace (mountns.NamespaceJail) whose /etc/passwd and /etc/shadow are copies of the
machine's with one test user appended, bind-mounted over the originals.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import harness as h
import mountns
import netns

SOCKS_PORT = 1080
SOCKS_ADDRESS = netns.RELAY_CLIENT_SIDE_V4
USER, PASSWORD = "sluicetest", "pa:ss@word"  # a colon and an at sign: percent-encoding is exercised


def upstream_url(auth: bool) -> str:
    """`--upstream` for the test servers: the password percent-encoded as a URL needs it."""
    if not auth:
        return f"socks5://{SOCKS_ADDRESS}:{SOCKS_PORT}"
    return f"socks5://{USER}:{PASSWORD.replace(':', '%3A').replace('@', '%40')}@{SOCKS_ADDRESS}:{SOCKS_PORT}"


@dataclass
class SocksServer:
    proc: h.Proc
    log: Path
    jail: "PasswdJail | None" = None

    def close(self) -> None:
        self.proc.stop(timeout=5)
        if self.jail:
            self.jail.close()


class PasswdJail(mountns.NamespaceJail):
    """A `sleep` in the relay namespace and a private mount namespace whose /etc/passwd and
    /etc/shadow hold the test user."""

    def __init__(self, ns: str, workdir: Path) -> None:
        passwd = workdir / "jail-passwd"
        shadow = workdir / "jail-shadow"
        passwd.write_text(Path("/etc/passwd").read_text() + f"{USER}:x:65533:65533:sluice e2e:/nonexistent:/usr/sbin/nologin\n")
        digest = subprocess.run(["openssl", "passwd", "-6", "-stdin"], input=PASSWORD, capture_output=True, text=True,
                                check=True, timeout=10).stdout.strip()
        shadow.write_text(Path("/etc/shadow").read_text() + f"{USER}:{digest}:19000:0:99999:7:::\n")
        passwd.chmod(0o644)
        shadow.chmod(0o640)
        script = (f"set -e; mount --bind '{passwd}' /etc/passwd; mount --bind '{shadow}' /etc/shadow; "
                  "echo ready; exec sleep 100000")
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, "unshare", "--mount", "--propagation", "private",
                                      "--", "sh", "-c", script],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._await_ready("passwd jail")


def start_danted(runner: h.Runner, topo: netns.Topology, auth: bool, address: str = SOCKS_ADDRESS,
                 debug: bool = True) -> SocksServer:
    """danted on `address`:SOCKS_PORT, TCP and UDP, every destination allowed; with `auth`, only
    USER/PASSWORD (RFC 1929) gets in. `debug` logs every session (tests); benchmarks log errors only."""
    log = runner.workdir / "danted.log"
    conf = runner.workdir / "danted.conf"
    method = "username" if auth else "none"
    conf.write_text(f"""
logoutput: {log}
debug: {1 if debug else 0}
internal: {address} port = {SOCKS_PORT}
external: {netns.RELAY_SERVER_SIDE_V4}
external: {netns.RELAY_SERVER_SIDE_V6}
clientmethod: none
socksmethod: {method}
user.privileged: root
user.unprivileged: nobody
client pass {{ from: 0.0.0.0/0 to: 0.0.0.0/0 }}
socks pass {{ from: 0.0.0.0/0 to: 0.0.0.0/0 command: connect udpassociate }}
socks pass {{ from: 0.0.0.0/0 to: ::/0 command: connect udpassociate }}
socks pass {{ from: 0/0 to: 0/0 command: udpreply }}
""")
    argv = ["danted", "-f", str(conf), "-p", str(runner.workdir / "danted.pid"), "-N", "1"]
    jail = None
    if auth:
        jail = PasswdJail(topo.relay, runner.workdir)
        proc = runner.start("danted", jail.argv(argv))
    else:
        proc = runner.start("danted", argv, ns=topo.relay)
    server = SocksServer(proc, log, jail)
    _wait_listening(topo, server, "danted")
    return server


def start_microsocks(runner: h.Runner, topo: netns.Topology, auth: bool) -> SocksServer:
    """microsocks on SOCKS_ADDRESS:SOCKS_PORT: CONNECT only (it answers UDP ASSOCIATE "command not
    supported"); with `auth`, USER/PASSWORD."""
    argv = ["microsocks", "-i", SOCKS_ADDRESS, "-p", str(SOCKS_PORT)]
    if auth:
        argv += ["-u", USER, "-P", PASSWORD]
    proc = runner.start("microsocks", argv, ns=topo.relay)
    server = SocksServer(proc, proc.log)
    _wait_listening(topo, server, "microsocks")
    return server


def _wait_listening(topo: netns.Topology, server: SocksServer, name: str) -> None:
    def listening() -> bool:
        if not server.proc.alive():
            raise RuntimeError(f"{name} exited {server.proc.popen.returncode}:\n{h.tail(server.proc.log)}\n{h.tail(server.log)}")
        return bool(topo.exec(topo.relay, ["ss", "-Htln", f"sport = :{SOCKS_PORT}"], timeout=5).stdout.strip())

    h.wait_for(listening, 10, what=f"{name} to listen on port {SOCKS_PORT}")
