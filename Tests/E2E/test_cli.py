"""The command line: keys, and bad input (a one-line error, exit 2 for usage/config, nothing installed).

Anything that runs `sluice up` does so inside a fresh namespace, so a parser that wrongly accepts bad
input can never install a TUN or a rule on the host. Relay invocations listen on loopback only.
"""

import base64
import json

import pytest

import harness as h
import netns
from test_lifecycle import one_line_error

pytestmark = pytest.mark.sluice

# RFC 7748 §6.1, Alice: private key (unclamped, so it also checks clamping) and its public key.
RFC7748_PRIVATE = bytes.fromhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
RFC7748_PUBLIC = bytes.fromhex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
LOOPBACK_LISTEN = "127.0.0.1:17999"


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def decode_key(text: str) -> bytes:
    assert len(text) == 44, f"not 44 characters of base64: {text!r}"
    raw = base64.b64decode(text, validate=True)
    assert len(raw) == 32
    return raw


# -- keys -----------------------------------------------------------------------------------------

def test_keygen_gives_fresh_base64_keys():
    a, b = h.run_sluice(["keygen"]), h.run_sluice(["keygen"])
    assert a.returncode == 0 and b.returncode == 0, a.stderr
    ka, kb = a.stdout.decode().strip(), b.stdout.decode().strip()
    assert a.stdout.decode().count("\n") == 1, "keygen must print exactly one line"
    decode_key(ka), decode_key(kb)
    assert ka != kb, "two keygen runs gave the same key"


def test_keygen_pipe_pubkey():
    key = h.run_sluice(["keygen"]).stdout
    cp = h.run_sluice(["pubkey"], input=key)
    assert cp.returncode == 0, cp.stderr
    pub = cp.stdout.decode().strip()
    decode_key(pub)
    independent = h.x25519_public(key.decode().strip())
    if independent is not None:
        assert pub == independent, "sluice pubkey disagrees with an independent X25519 implementation"


def test_keygen_output_writes_mode_0600_and_refuses_to_overwrite(workdir):
    """`keygen --output` makes a file only its owner can read, even under umask 000; an existing
    file is left alone (exit 1) unless --force, which replaces it, again with mode 0600."""
    path = workdir / "made.key"
    cp = h.run_sluice(["keygen", "--output", str(path)], prefix=["sh", "-c", 'umask 000; exec "$@"', "sh"])
    assert cp.returncode == 0 and cp.stdout == b"", cp.stderr
    assert path.stat().st_mode & 0o777 == 0o600, oct(path.stat().st_mode)
    key = path.read_text()
    assert key.endswith("\n") and key.count("\n") == 1
    decode_key(key.strip())
    assert h.run_sluice(["pubkey"], input=key.encode()).returncode == 0

    cp = h.run_sluice(["keygen", "--output", str(path)])
    assert cp.returncode == 1, f"exit code {cp.returncode}; stderr: {cp.stderr!r}"
    line = one_line_error(cp.stderr)
    assert "already exists" in line and "--force" in line, line
    assert path.read_text() == key, "keygen overwrote an existing key without --force"

    path.chmod(0o644)
    cp = h.run_sluice(["keygen", "--output", str(path), "--force"])
    assert cp.returncode == 0, cp.stderr
    assert path.read_text() != key and path.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in workdir.iterdir()) == ["made.key"], "a temporary file was left behind"


@pytest.mark.parametrize("newline", [b"\n", b""], ids=["with-newline", "without-newline"])
def test_pubkey_of_rfc7748_vector(newline):
    cp = h.run_sluice(["pubkey"], input=b64(RFC7748_PRIVATE).encode() + newline)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.decode().strip() == b64(RFC7748_PUBLIC)


# -- bad input ------------------------------------------------------------------------------------

@pytest.fixture
def keys(workdir):
    return h.make_keypair(workdir, "relay"), h.make_keypair(workdir, "client")


def relay_args(keys, *extra):
    relay, client = keys
    return ["relay", "--listen", LOOPBACK_LISTEN, "--private-key", str(relay.path),
            "--allow-client", client.public, "--handshake-timeout", "1", *extra]


def assert_usage_error(cp, *mentions):
    assert cp.returncode is not None, "sluice did not exit on bad input (killed after the timeout)"
    assert cp.returncode == 2, f"exit code {cp.returncode}, expected 2; stderr: {cp.stderr!r}"
    line = one_line_error(cp.stderr)
    for m in mentions:  # each a string, or a tuple of acceptable alternatives
        alternatives = m if isinstance(m, tuple) else (m,)
        assert any(a in line for a in alternatives), f"the error does not name {' or '.join(alternatives)}: {line!r}"
    return line


def test_unknown_flag(keys):
    assert_usage_error(h.run_sluice(relay_args(keys, "--no-such-flag")), "--no-such-flag")


def test_unknown_command():
    cp = h.run_sluice(["teleport"])
    assert_usage_error(cp, "teleport")


def test_malformed_key_on_stdin():
    cp = h.run_sluice(["pubkey"], input=b"this is not a key\n")
    assert cp.returncode == 2, f"exit code {cp.returncode}; stderr: {cp.stderr!r}"
    one_line_error(cp.stderr)


@pytest.mark.parametrize("text", ["not base64 at all!", b64(bytes(31)), b64(bytes(33))],
                         ids=["not-base64", "31-bytes", "33-bytes"])
def test_malformed_private_key_file(keys, workdir, text):
    bad = workdir / "bad.key"
    bad.write_text(text + "\n")
    relay, client = keys
    args = ["relay", "--listen", LOOPBACK_LISTEN, "--private-key", str(bad), "--allow-client", client.public]
    assert_usage_error(h.run_sluice(args), "bad.key")


def test_malformed_allow_client_key(keys):
    relay, _ = keys
    args = ["relay", "--listen", LOOPBACK_LISTEN, "--private-key", str(relay.path), "--allow-client", "garbage"]
    assert_usage_error(h.run_sluice(args), ("--allow-client", "allowClient", "garbage"))


def test_relay_and_bench_refuse_key_files_others_may_read(keys, workdir):
    """A private key or PSK file that group or others may read is refused, as ssh refuses one:
    exit 2, one line naming the file and the `chmod 600` that fixes it."""
    relay, client = keys
    relay.path.chmod(0o644)
    line = assert_usage_error(h.run_sluice(relay_args(keys)), str(relay.path), "chmod 600", "mode 0644")
    assert "accessible by other users" in line, line
    relay.path.chmod(0o600)
    psk = h.make_psk(workdir, "shared")
    psk.chmod(0o640)
    assert_usage_error(h.run_sluice(relay_args(keys, "--psk", str(psk))), str(psk), "chmod 600", "mode 0640")
    client.path.chmod(0o604)
    bench = ["bench", "--relay", LOOPBACK_LISTEN, "--relay-public-key", relay.public, "--private-key", str(client.path)]
    assert_usage_error(h.run_sluice(bench), str(client.path), "chmod 600")


def test_up_refuses_a_key_file_others_may_read_and_installs_nothing(keys, topology):
    """The issue's check: a 0644 private key -> a clear error, exit 2, nothing installed."""
    relay, client = keys
    client.path.chmod(0o644)
    argv = h.client_argv(f"{netns.RELAY_CLIENT_SIDE_V4}:{h.RELAY_PORT}", relay.public, client)[1:]
    before = h.net_state(topology, topology.client)
    cp = h.run_sluice(argv, ns=topology.client)
    assert_usage_error(cp, str(client.path), "chmod 600", "mode 0644")
    after = h.net_state(topology, topology.client)
    assert h.sluice_footprint(after) == [] and h.state_diff(before, after) == []


def test_missing_key_file(keys, workdir):
    _, client = keys
    missing = workdir / "absent.key"
    cp = h.run_sluice(["relay", "--listen", LOOPBACK_LISTEN, "--private-key", str(missing),
                       "--allow-client", client.public])
    assert cp.returncode in (1, 2), f"exit code {cp.returncode}; stderr: {cp.stderr!r}"
    assert "absent.key" in one_line_error(cp.stderr)


def relay_json(keys, **override):
    relay, client = keys
    cfg = {"listen": LOOPBACK_LISTEN, "privateKey": str(relay.path), "allowClient": [client.public]}
    cfg.update(override)
    return cfg


@pytest.mark.parametrize("override,key", [
    ({"listenn": "0.0.0.0:7000"}, "listenn"),
    ({"listen": 7000}, "listen"),
    ({"allowClient": "not-an-array"}, "allowClient"),
    ({"maxStreams": "many"}, "maxStreams"),
], ids=["unknown-key", "number-for-string", "string-for-array", "string-for-number"])
def test_relay_json_config_errors_name_key_and_file(keys, workdir, override, key):
    path = workdir / "relay-config.json"
    path.write_text(json.dumps(relay_json(keys, **override)))
    assert_usage_error(h.run_sluice(["relay", "--config", str(path)]), key, "relay-config.json")


def test_json_syntax_error_names_file(keys, workdir):
    path = workdir / "broken.json"
    path.write_text(json.dumps(relay_json(keys))[:-5])
    assert_usage_error(h.run_sluice(["relay", "--config", str(path)]), "broken.json")


@pytest.mark.parametrize("override,key", [
    ({"bogus": True}, "bogus"),
    ({"carriers": "two"}, "carriers"),
    ({"route": "10.20.0.0/24"}, "route"),
], ids=["unknown-key", "string-for-number", "string-for-array"])
def test_client_json_config_errors_install_nothing(keys, topology, workdir, override, key):
    relay, client = keys
    cfg = {"relay": f"{netns.RELAY_CLIENT_SIDE_V4}:{h.RELAY_PORT}", "relayPublicKey": relay.public,
           "privateKey": str(client.path), "tun": h.TUN, "address": h.CLIENT_ADDRESSES, "route": h.CLIENT_ROUTES}
    cfg.update(override)
    path = workdir / "client-config.json"
    path.write_text(json.dumps(cfg))
    before = h.net_state(topology, topology.client)
    cp = h.run_sluice(["up", "--config", str(path)], ns=topology.client)
    assert_usage_error(cp, key, "client-config.json")
    after = h.net_state(topology, topology.client)
    assert h.sluice_footprint(after) == [] and h.state_diff(before, after) == []


@pytest.mark.parametrize("bad", [["--address", "198.18.0.1/33"], ["--route", "not-a-prefix"],
                                 ["--relay-public-key", "short"], ["--carriers", "0"], ["--mtu", "-1"]],
                         ids=["address", "route", "relay-key", "carriers", "mtu"])
def test_up_flag_errors_install_nothing(keys, topology, bad):
    relay, client = keys
    argv = h.client_argv(f"{netns.RELAY_CLIENT_SIDE_V4}:{h.RELAY_PORT}", relay.public, client)[1:]
    if bad[0] in argv:  # replace a flag's first value instead of repeating it
        i = argv.index(bad[0])
        argv[i + 1] = bad[1]
    else:
        argv += bad
    before = h.net_state(topology, topology.client)
    cp = h.run_sluice(argv, ns=topology.client)
    assert_usage_error(cp, (bad[0], bad[0].lstrip("-"), bad[1]))
    after = h.net_state(topology, topology.client)
    assert h.sluice_footprint(after) == [] and h.state_diff(before, after) == []
