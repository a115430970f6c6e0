#!/usr/bin/env bash
# End-to-end: the wsnap program's dispatch, usage and exit codes.
set -euo pipefail
: "${WSNAP_BIN:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }

rc=0; "$WSNAP_BIN" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "bare wsnap exits $rc, want 2"
"$WSNAP_BIN" --help | grep '^usage: wsnap' >/dev/null || fail "--help prints usage"
"$WSNAP_BIN" --version | grep '^wsnap ' >/dev/null || fail "--version"
rc=0; "$WSNAP_BIN" no-such-command 2>/dev/null || rc=$?
[ "$rc" -eq 2 ] || fail "unknown command exits $rc, want 2"
echo "e2e_cli: ok"
