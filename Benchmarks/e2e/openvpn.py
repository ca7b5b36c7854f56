"""The openvpn peer mode: Debian's OpenVPN 2.6 (package openvpn) over UDP, AES-256-GCM in user space.

    client ns                                         relay ns
    ovpn-c 10.99.1.2/24 (pushed), route 10.20.0.0/24 ══ UDP 10.10.0.1 → 10.10.0.2:1194 ══ ovpn-r 10.99.1.1/24

A throwaway PKI, made with openssl for each mode run in its temporary directory (easy-rsa would do the
same with more steps): a CA, a server certificate (extended key usage serverAuth, which the client's
`--remote-cert-tls server` requires) and a client certificate (clientAuth), all P-256. The TLS control
channel is OpenVPN's default; `--dh none` lets it use ECDHE only, as OpenVPN 2.6's manual recommends.

Settings are OpenVPN's defaults except what this comparison needs said:
- `--data-ciphers AES-256-GCM` on both ends: the one data-channel cipher, as the issue compares it
  (with AES-NI, OpenSSL's fastest AEAD here).
- `--disable-dco`: this kernel has no ovpn-dco module, so OpenVPN would fall back to user space anyway;
  saying so keeps the mode what it claims to be on a kernel that has one.
- `--server 10.99.1.0 255.255.255.0` with `--topology subnet` (the manual's recommended topology) and
  a pushed route to the server network, as a user's config would have it.
- MTU, `--mssfix`, `--sndbuf`/`--rcvbuf`: defaults (tun-mtu 1500; mssfix 1492 bytes for the whole
  encapsulated packet; socket buffers the system's).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import harness as h
import netns
import peers

PORT = 1194
NETWORK = "10.99.1.0"
CLIENT_DEVICE, RELAY_DEVICE = "ovpn-c", "ovpn-r"  # device names are per namespace: no clash
COMMON = ["--proto", "udp4", "--dev-type", "tun", "--data-ciphers", "AES-256-GCM", "--disable-dco", "--verb", "3"]
READY = "Initialization Sequence Completed"


def _openssl(*args: str, cwd: Path) -> None:
    cp = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=30)
    if cp.returncode != 0:
        raise RuntimeError(f"openssl {args[0]}: {cp.stderr.strip()}")


def make_pki(workdir: Path) -> dict[str, Path]:
    """ca.crt, server.crt/.key, client.crt/.key in `workdir` (valid for two days)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
             "-subj", "/CN=sluice-bench-ca", cwd=workdir)
    for name, usage in (("server", "serverAuth"), ("client", "clientAuth")):
        ext = workdir / f"{name}.ext"
        ext.write_text(f"basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage={usage}\n")
        _openssl("req", "-new", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN=sluice-bench-{name}", cwd=workdir)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-days", "2", "-out", f"{name}.crt", "-extfile", ext.name, cwd=workdir)
    for key in workdir.glob("*.key"):
        key.chmod(0o600)
    return {n: workdir / n for n in ("ca.crt", "server.crt", "server.key", "client.crt", "client.key")}


class OpenVPN:
    """An OpenVPN server in the relay namespace and one client."""

    relay_device = RELAY_DEVICE

    def __init__(self, topo: netns.Topology, workdir: Path, extra: list[str] | None = None) -> None:
        self.topo, self.extra = topo, extra or []
        pki = workdir / "openvpn-pki"
        pki.mkdir(exist_ok=True)
        self.files = make_pki(pki)

    def start(self, runner: h.Runner) -> tuple[h.Proc, h.Proc]:
        t, f = self.topo, self.files
        relay = runner.start("openvpn-relay", [
            "openvpn", *COMMON, "--dev", RELAY_DEVICE, "--local", netns.RELAY_CLIENT_SIDE_V4, "--port", str(PORT),
            "--server", NETWORK, "255.255.255.0", "--topology", "subnet",
            "--push", f"route {netns.SERVER_NET_V4.split('/')[0]} 255.255.255.0",
            "--ca", str(f["ca.crt"]), "--cert", str(f["server.crt"]), "--key", str(f["server.key"]), "--dh", "none",
            *self.extra], ns=t.relay)
        h.wait_for(lambda: self._ready(relay, "relay"), 10, what="the OpenVPN server to listen")
        client = runner.start("openvpn-client", [
            "openvpn", *COMMON, "--client", "--dev", CLIENT_DEVICE, "--nobind",
            "--remote", netns.RELAY_CLIENT_SIDE_V4, str(PORT), "--remote-cert-tls", "server",
            "--ca", str(f["ca.crt"]), "--cert", str(f["client.crt"]), "--key", str(f["client.key"]),
            *self.extra], ns=t.client)
        h.wait_for(lambda: self._ready(client, "client"), 20, what="the OpenVPN client's TLS handshake and routes")
        peers.wait_route(t, CLIENT_DEVICE, client)
        return client, relay

    def close(self) -> None:
        """Nothing outside the namespaces: the PKI lives in the run's temporary directory."""

    @staticmethod
    def _ready(proc: h.Proc, side: str) -> bool:
        """OpenVPN logs READY when its device is up: the server at once, the client after the handshake."""
        if not proc.alive():
            raise RuntimeError(f"openvpn ({side}) exited {proc.popen.returncode}:\n{h.tail(proc.log)}")
        return READY in proc.log.read_text(errors="replace")
