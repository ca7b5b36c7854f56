#!/usr/bin/env bash
# Installs the Debian packages that building Sluice and running its tests need.
# Idempotent: asks apt only about packages that are missing, and runs `apt-get update`
# only when something has to be installed. Run as root (CI does), or with sudo available.
#
#   scripts/deps.sh            install what is missing
#   scripts/deps.sh --check    list what is missing, install nothing (exit 1 if anything is)
set -euo pipefail

packages=(
    # Build: the system libraries the Swift package links (pkg-config names lwip, libsodium, libgcrypt).
    # Run time: libnftables, opened (dlopen) for the kill switch, --no-ipv6 and per-app routing.
    liblwip-dev libsodium-dev libgcrypt20-dev pkg-config libnftables1
    # make build links libstdc++ statically (Makefile, RELEASE_FLAGS): its libstdc++.a.
    libstdc++-12-dev
    # End-to-end tests, demo and benchmarks: namespaces and routes, real clients, capabilities.
    iproute2 curl iperf3 util-linux libcap2-bin procps nftables
    # UDP, DNS and ICMP tests: dig (bind9-dnsutils; "dnsutils" is only its transitional name), ping,
    # and dnsmasq as the DNS server. dnsmasq-base is the binary alone: the "dnsmasq" package would
    # also start a system-wide service on port 53.
    bind9-dnsutils iputils-ping dnsmasq-base
    # The UDP path's NAT rebinding test (Tests/E2E/test_udp_path.py): conntrack deletes the router's
    # NAT entry so that the next packet gets a new source port.
    conntrack
    # systemd-resolved tests (Tests/E2E/resolvedns.py): a system bus, and the private library the
    # resolved daemon links. The daemon itself (systemd-resolved, libnss-resolve) is never installed:
    # the tests fetch it with `apt-get download` and unpack it under .build/. libsystemd0 is what
    # `sluice up` opens (dlopen) to talk to resolved.
    dbus-daemon libsystemd-shared libsystemd0
    # A real application through the tunnel (test_latency: `ssh host true`): the tests run their own
    # sshd, in a namespace, on port 2222. Installing openssh-server also sets up the machine's own
    # ssh service as Debian does; the tests neither need nor touch it.
    openssh-server openssh-client
    # SOCKS5 servers for `up --upstream` and the `make bench` SOCKS5 mode: dante-server (danted, TCP
    # and UDP) and microsocks, which the tests start themselves in a namespace with a configuration of
    # their own; openssl makes the password hash of danted's test user.
    dante-server microsocks openssl
    # A relay fleet behind a load balancer (Tests/E2E/test_fleet.py, docs/deployment.md): HAProxy in
    # TCP mode with send-proxy-v2, started by the test in a namespace with its own configuration.
    # Installing the package also sets up Debian's haproxy service; the tests neither need nor touch it.
    haproxy
    # The pytest suite and the independent X25519 check of `sluice pubkey`.
    python3 python3-pytest python3-cryptography
    # systemd-analyze, which checks the units in contrib/systemd (no service is started).
    systemd
    # make bench: its C load generator (Benchmarks/e2e/loadgen.c) is compiled at run time.
    gcc libc6-dev
    # make bench's peer modes and their end-to-end test (Benchmarks/e2e/peers.py): WireGuard in user
    # space, OpenVPN 2.6, and openssl for OpenVPN's throwaway CA.
    wireguard-go wireguard-tools openvpn openssl
    make
)

missing=()
for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "deps: all ${#packages[@]} packages present"
    exit 0
fi
if [[ "${1:-}" == "--check" ]]; then
    echo "deps: missing: ${missing[*]}"
    exit 1
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "deps: missing ${missing[*]}; run as root to install them" >&2; exit 1; }
    sudo=(sudo)
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
