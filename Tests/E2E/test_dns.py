"""DNS through the tunnel, with a real server (dnsmasq in the server namespace, harness.start_dns)
and a real client (dig in the client namespace).

Plain queries to the server's addresses travel as ordinary UDP and TCP flows. With `--dns ADDR`,
`sluice up` sends every query to port 53 — whatever address the application used — to ADDR through
the relay ("hijack"); the answer must come back from the address the application asked, or dig would
ignore it ("reply from unexpected source"). dnsmasq logs the source of every query, so a test can
see that it came out of the relay.

Every query uses a name of its own under harness.DNS_ZONE, so the log identifies it.
"""

import re

import pytest

import harness as h
import netns

FAMILIES = ["ipv4", "ipv6"]
RELAY_ADDRS = {netns.RELAY_SERVER_SIDE_V4, netns.RELAY_SERVER_SIDE_V6}


def query(t, dns, server: str, name: str, qtype: str, tcp: bool, peers: set[str]) -> None:
    """One dig query, answered with the zone's address; dnsmasq saw it exactly once, from `peers`."""
    cp = h.dig(t.topo, server, name, qtype, *(["+tcp"] if tcp else []))
    how = f"dig @{server} {name} {qtype}{' +tcp' if tcp else ''}"
    assert cp.returncode == 0, f"{how} exited {cp.returncode}: {cp.stdout.strip()} {cp.stderr.strip()}"
    assert cp.stdout.split() == [h.DNS_A if qtype == "A" else h.DNS_AAAA], f"{how} answered {cp.stdout!r}"
    seen = dns.wait_query(name)
    assert len(seen) == 1, f"dnsmasq saw {how} {len(seen)} times (dig retried?)"
    assert seen[0]["type"] == qtype and seen[0]["source"] in peers, f"dnsmasq saw {seen[0]}"


@pytest.mark.parametrize("family", FAMILIES)
def test_dns_a_and_aaaa_over_udp_and_tcp(make_tunnel, dns_server, family):
    """A and AAAA queries to the server's address, over UDP and over TCP, answered; dnsmasq saw
    each once, from the relay."""
    t = make_tunnel()
    server = t.topo.server_addr(family)
    for tcp in (False, True):
        for qtype in ("A", "AAAA"):
            name = f"{qtype.lower()}-{'tcp' if tcp else 'udp'}-{family}.{h.DNS_ZONE}"
            query(t, dns_server, server, name, qtype, tcp, {t.topo.expected_peer(family)})


@pytest.mark.parametrize("family", FAMILIES)
def test_dns_truncated_answer_is_retried_over_tcp(make_tunnel, dns_server, family):
    """A TXT answer of about 3 KB does not fit dnsmasq's UDP limit (1232 bytes): it answers with the
    TC bit, dig retries over TCP and gets every string of the record."""
    t = make_tunnel()
    server = t.topo.server_addr(family)
    cp = t.topo.exec(t.topo.client, ["dig", f"@{server}", h.DNS_BIG, "TXT", "+time=3", "+tries=1"], timeout=20)
    assert cp.returncode == 0, f"dig exited {cp.returncode}: {cp.stdout[-1500:]} {cp.stderr}"
    assert ";; Truncated, retrying in TCP mode." in cp.stdout, "the UDP answer was not truncated"
    answers = [line for line in cp.stdout.splitlines() if line.startswith(h.DNS_BIG + ".") and "\tTXT\t" in line]
    assert len(answers) == 1, f"expected one TXT record in the answer: {cp.stdout[-1500:]}"
    assert re.findall(r'"([^"]*)"', answers[0]) == h.dns_big_txt(), "the TXT record arrived incomplete or altered"
    seen = dns_server.wait_query(h.DNS_BIG, count=2)  # the UDP query and its TCP retry
    assert [q["source"] for q in seen] == [t.topo.expected_peer(family)] * 2


@pytest.mark.sluice
@pytest.mark.parametrize("family", FAMILIES)
def test_dns_hijack_answers_queries_to_any_address(make_tunnel, dns_server, family):
    """With --dns <server>, a query to an address inside a routed prefix where no host exists
    (10.20.0.77 / fd20::77) is answered anyway, over UDP and TCP, by dnsmasq, which saw it come
    from the relay. dig accepting the answer shows it came back from the address dig asked."""
    t = make_tunnel(client_extra=["--dns", netns.SERVER_V6 if family == "ipv6" else netns.SERVER_V4])
    nowhere = "fd20::77" if family == "ipv6" else "10.20.0.77"
    for tcp in (False, True):
        for qtype in ("A", "AAAA"):
            name = f"hijack-{qtype.lower()}-{'tcp' if tcp else 'udp'}-{family}.{h.DNS_ZONE}"
            query(t, dns_server, nowhere, name, qtype, tcp, {t.topo.expected_peer(family)})


@pytest.mark.sluice
def test_dns_hijack_outside_the_routes(make_tunnel, dns_server):
    """--dns takes every query to port 53, also to addresses the tunnel does not route and the
    client namespace has no route to at all (192.0.2.53, 2001:db8::53: documentation prefixes)."""
    t = make_tunnel(client_extra=["--dns", netns.SERVER_V4, "--dns", netns.SERVER_V6])
    for nowhere in ("192.0.2.53", "2001:db8::53"):
        for tcp in (False, True):
            name = f"outside-{'tcp' if tcp else 'udp'}-{nowhere.replace(':', '-').replace('.', '-')}.{h.DNS_ZONE}"
            query(t, dns_server, nowhere, name, "A", tcp, RELAY_ADDRS)
