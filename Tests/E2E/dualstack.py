"""socketserver servers on [::] that take IPv4 too (IPV6_V6ONLY off), for the test servers that
listen on both families with one socket (fake_resolver.py, latency.py)."""

from __future__ import annotations

import socket
import socketserver


class UDP6(socketserver.ThreadingUDPServer):
    address_family = socket.AF_INET6
    allow_reuse_address = True

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class TCP6(socketserver.ThreadingTCPServer):
    address_family = socket.AF_INET6
    allow_reuse_address = True
    daemon_threads = True

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()
