#!/usr/bin/env bash
# Runs the end-to-end suite (needs root: it makes network namespaces). Arguments go to pytest.
#   scripts/e2e.sh                         all tests against $SLUICE_BIN (default .build/release/sluice)
#   SLUICE_E2E_MODE=kernel scripts/e2e.sh  the harness against plain kernel forwarding (no binary needed)
#   scripts/e2e.sh -k download -x          the usual pytest selection
# The whole run is capped (SLUICE_E2E_TIMEOUT seconds, default 1800) so nothing can hang CI.
set -euo pipefail
cd "$(dirname "$0")/.."

py=""
for p in /usr/bin/python3 python3; do  # Debian's first: scripts/deps.sh gives it pytest
    if "$p" -c 'import pytest' >/dev/null 2>&1; then py=$p; break; fi
done
if [[ -z "$py" ]]; then
    echo "e2e: no python3 with pytest found; run scripts/deps.sh" >&2
    exit 1
fi
if [[ "${SLUICE_E2E_MODE:-sluice}" != kernel && ! -x "${SLUICE_BIN:-.build/release/sluice}" ]]; then
    echo "e2e: ${SLUICE_BIN:-.build/release/sluice} not found; run 'make build' first" >&2
fi
where=(Tests/E2E)  # unless the arguments name test files or folders themselves
for a in "$@"; do [[ $a != -* && -e ${a%%::*} ]] && where=(); done
exec timeout -k 30 "${SLUICE_E2E_TIMEOUT:-1800}" "$py" -m pytest "${where[@]}" "$@"
