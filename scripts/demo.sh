#!/usr/bin/env bash
# Sluice demo: a client, a relay and a web server, each in its own network namespace.
#
#   client ns 10.10.0.1 ── relay ns 10.10.0.2 | 10.20.0.1 ── server ns 10.20.0.2
#
# The relay does not forward packets, so the client can reach the server only through Sluice:
# `sluice up` on the client turns every TCP connection to 10.20.0.0/24 or fd20::/64 into a stream
# of an encrypted carrier to `sluice relay`, which opens the real connection to the server.
# The demo downloads a 256 MiB file over IPv4 and a smaller one over IPv6, checks them by sha256,
# and shows which address the server saw. Everything it makes is removed when it ends.
#
# Run as root:  make demo   (or scripts/demo.sh after `make build`)
# Settings:     SLUICE_BIN (default .build/release/sluice), SLUICE_DEMO_MIB (default 256),
#               SLUICE_DEMO_MODE=kernel to run the same downloads over plain kernel forwarding.
set -euo pipefail
cd "$(dirname "$0")/.."

SLUICE_BIN=${SLUICE_BIN:-.build/release/sluice}
MODE=${SLUICE_DEMO_MODE:-sluice}
MIB=${SLUICE_DEMO_MIB:-256}
V6_MIB=$(( MIB / 4 > 0 ? MIB / 4 : 1 ))
E2E=Tests/E2E
PY=python3
[[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3

if [[ -t 1 ]]; then bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }; else bold() { printf '\n== %s\n' "$*"; }; fi
say() { printf '  %s\n' "$*"; }
die() { printf '\ndemo: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "run as root (it creates network namespaces)"
if [[ $MODE == sluice ]]; then
    [[ -x $SLUICE_BIN ]] || die "$SLUICE_BIN not found: run 'make build' first"
    SLUICE_BIN=$(realpath "$SLUICE_BIN")
fi

work=$(mktemp -d /tmp/sluice-demo.XXXXXX)
chmod 755 "$work"
pids=()        # every process this script started, by pid
client_pid=""
PREFIX=""

show_logs() {
    local f
    for f in "$work"/relay.log "$work"/client.log "$work"/server.log; do
        if [[ -s $f ]]; then printf '\n--- %s (last lines) ---\n' "${f##*/}"; tail -n 15 "$f"; fi
    done
    return 0
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    set +e  # clean up as much as possible, whatever fails
    if [[ $rc -ne 0 ]]; then show_logs; fi
    bold "Cleaning up"
    if [[ -n $client_pid ]] && kill -0 "$client_pid" 2>/dev/null; then
        kill -TERM "$client_pid" 2>/dev/null || true   # sluice up removes its TUN, routes and rules
        for _ in $(seq 50); do kill -0 "$client_pid" 2>/dev/null || break; sleep 0.1; done
    fi
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    sleep 0.2
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    [[ -n $PREFIX ]] && "$PY" $E2E/netns.py destroy --prefix "$PREFIX"
    rm -rf "$work"
    say "namespaces, processes and temporary files removed"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

wait_until() {  # wait_until SECONDS DESCRIPTION COMMAND...
    local secs=$1 what=$2; shift 2
    local deadline=$(( $(date +%s) + secs ))
    until "$@" >/dev/null 2>&1; do
        (( $(date +%s) < deadline )) || die "timed out after ${secs}s waiting for $what"
        sleep 0.1
    done
}

bold "1. Three network namespaces ($MODE mode)"
"$PY" $E2E/netns.py gc --tag demo   # namespaces an earlier, killed demo left behind
ns_vars=$("$PY" $E2E/netns.py create --mode "$MODE" --owner-pid $$)
eval "$ns_vars"
say "client: $CLIENT_NS  (10.10.0.1, fd10::1)"
say "relay:  $RELAY_NS  (10.10.0.2, fd10::2 toward the client; 10.20.0.1, fd20::1 toward the server)"
say "server: $SERVER_NS  (10.20.0.2, fd20::2)"
if [[ $MODE == sluice ]]; then
    say "the relay namespace does not forward: without Sluice the client has no way to the server"
else
    say "the relay namespace forwards like a router (the comparison baseline, no Sluice involved;"
    say "steps 3-5, keys, relay and client, are skipped)"
fi

bold "2. A web server in the server namespace"
ip netns exec "$SERVER_NS" "$PY" $E2E/servers.py --http-port 8080 --tcp-port 9000 --log "$work/server-events.jsonl" \
    --ready-file "$work/server-ready.json" --pregen-mib "$MIB" >"$work/server.log" 2>&1 &
pids+=($!)
wait_until 60 "the web server" test -e "$work/server-ready.json"
say "listening on [::]:8080; GET /bytes/N sends N deterministic bytes"

if [[ $MODE == sluice ]]; then
    bold "3. Keys (like WireGuard's: base64 of 32 bytes)"
    "$SLUICE_BIN" keygen >"$work/relay.key"
    "$SLUICE_BIN" keygen >"$work/client.key"
    chmod 600 "$work"/*.key
    relay_pub=$("$SLUICE_BIN" pubkey <"$work/relay.key")
    client_pub=$("$SLUICE_BIN" pubkey <"$work/client.key")
    say "relay public key:  $relay_pub"
    say "client public key: $client_pub"

    bold "4. sluice relay in the relay namespace"
    say "sluice relay --listen 0.0.0.0:7000 --private-key relay.key --allow-client $client_pub"
    ip netns exec "$RELAY_NS" "$SLUICE_BIN" relay --listen 0.0.0.0:7000 --private-key "$work/relay.key" \
        --allow-client "$client_pub" >"$work/relay.log" 2>&1 &
    pids+=($!)
    wait_until 10 "the relay to listen on port 7000" \
        bash -c "ip netns exec '$RELAY_NS' ss -Htln 'sport = :7000' | grep -q ."

    bold "5. sluice up in the client namespace"
    say "sluice up --relay 10.10.0.2:7000 --relay-public-key … --private-key client.key --tun sluice0 \\"
    say "          --address 198.18.0.1/30 --address fd53::1/126 --route 10.20.0.0/24 --route fd20::/64"
    ip netns exec "$CLIENT_NS" "$SLUICE_BIN" up --relay 10.10.0.2:7000 --relay-public-key "$relay_pub" \
        --private-key "$work/client.key" --tun sluice0 --address 198.18.0.1/30 --address fd53::1/126 \
        --route 10.20.0.0/24 --route fd20::/64 >"$work/client.log" 2>&1 &
    client_pid=$!
    pids+=($client_pid)
    wait_until 15 "sluice up to create sluice0" ip -n "$CLIENT_NS" link show dev sluice0
    say "sluice0 is up; routes to the server networks go through it:"
    ip -n "$CLIENT_NS" route show table 21324 | sed 's/^/      /'
    ip -n "$CLIENT_NS" -6 route show table 21324 | sed 's/^/      /'
fi

curl_in_client() { ip netns exec "$CLIENT_NS" curl -sS -g --noproxy '*' "$@"; }
wait_until 15 "a first request to the server" curl_in_client --max-time 2 -o /dev/null http://10.20.0.2:8080/bytes/1

download() {  # download LABEL URL MIB
    local label=$1 url=$2 mib=$3
    local bytes=$(( mib * 1024 * 1024 )) out="$work/download.bin"
    bold "$label"
    say "curl $url/bytes/$bytes"
    local stats
    stats=$(curl_in_client --max-time 300 -D "$work/headers.txt" -o "$out" -w '%{size_download} %{time_total}' \
        "$url/bytes/$bytes") || die "the download failed"
    local got=${stats% *} secs=${stats#* }
    local want_sha got_sha
    want_sha=$("$PY" $E2E/content.py "$bytes")
    got_sha=$(sha256sum "$out" | cut -d' ' -f1)
    rm -f "$out"
    local peer
    peer=$(tr -d '\r' <"$work/headers.txt" | awk -F': ' 'tolower($1)=="x-peer" {print $2}')
    say "received:    $got bytes in $secs s"
    say "throughput:  $(awk -v b="$got" -v s="$secs" 'BEGIN { printf "%.2f Gbit/s", b * 8 / s / 1e9 }')"
    if [[ $got_sha == "$want_sha" ]]; then
        say "sha256:      $got_sha — matches what the server sent"
    else
        die "sha256 mismatch: got $got_sha, the server sent $want_sha"
    fi
    say "server saw:  a connection from $peer"
}

via="through the Sluice tunnel"
[[ $MODE == kernel ]] && via="through kernel forwarding"
download "6. Download $MIB MiB over IPv4 $via" "http://10.20.0.2:8080" "$MIB"
download "7. Download $V6_MIB MiB over IPv6 $via" "http://[fd20::2]:8080" "$V6_MIB"

bold "Done"
if [[ $MODE == sluice ]]; then
    say "The server saw the relay (10.20.0.1 / fd20::1), never the client: every byte went through"
    say "the encrypted carrier between 10.10.0.1 and 10.10.0.2:7000."
else
    say "Kernel forwarding: the server saw the client's own address (10.10.0.1 / fd10::1)."
fi
