#!/usr/bin/env bash
# The engine's in-process tests (Tests/SluiceTunnelTests) once more as an unprivileged user: the
# engine needs no root, no TUN and no host change, and this proves it (issue 12). `make unit` runs
# it after `swift test` when it runs as root; as any other user `swift test` has already done so.
#
# The test bundle is copied into a fresh directory that uid 65534 may enter, so that the clone's own
# location (perhaps under a home directory only root may enter) does not matter.
set -euo pipefail

if [[ $(id -u) != 0 ]]; then
    echo "unit-unprivileged: not root; swift test already ran the engine tests as $(id -un)"
    exit 0
fi
bin=$(${SWIFT:-swift} build --show-bin-path)
bundle="$bin/SluicePackageTests.xctest"
[[ -x $bundle ]] || { echo "unit-unprivileged: $bundle missing; run swift build --build-tests first" >&2; exit 1; }
classes=$("$bundle" --list-tests 2>/dev/null | grep '^SluiceTunnelTests\.' | cut -d/ -f1 | sort -u | paste -sd, || true)
[[ -n $classes ]] || { echo "unit-unprivileged: $bundle lists no SluiceTunnelTests" >&2; exit 1; }

dir=$(mktemp -d /tmp/sluice-unpriv.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cp "$bundle" "$dir/"
chmod 755 "$dir"
echo "unit-unprivileged: SluiceTunnelTests as uid 65534 (nobody)"
cd "$dir"
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
    env -i PATH=/usr/bin:/bin HOME="$dir" "$dir/SluicePackageTests.xctest" "$classes"
