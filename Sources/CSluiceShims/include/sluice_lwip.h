// lwIP shims: lwIP's macros (tcp_listen, tcp_sndbuf, IP_ANY_TYPE, ...) and the netif/pcb fields the
// accept-any method writes are not importable into Swift. Called only on the stack thread.
#pragma once
