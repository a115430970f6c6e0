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

# Usage errors quote what was typed escaped like a name (policy.md section
# 2): no terminal sequence, right-to-left override or line separator
# reaches the terminal raw (issue 12, item 8).
err=$("$WSNAP_BIN" $'x\e[2J\xe2\x80\xae\xe2\x80\xa8' 2>&1 >/dev/null) && fail "accepted"
[ "$err" = "wsnap: unknown command 'x\\x1b[2J\\u202e\\u2028' (see 'wsnap --help')" ] ||
	fail "unknown command message: $err"
err=$("$WSNAP_BIN" check --max-depth $'1\xe2\x80\x8b' x.tar 2>&1 >/dev/null) &&
	fail "accepted"
[ "$err" = "wsnap: check: invalid --max-depth '1\\u200b': want a whole number from 0 to 2097152 (see 'wsnap check --help')" ] ||
	fail "bad value message: $err"
err=$("$WSNAP_BIN" check $'--bad\xc2\xa0' x.tar 2>&1 >/dev/null) && fail "accepted"
[ "$err" = "wsnap: check: option '--bad\\xa0' is not known (see 'wsnap check --help')" ] ||
	fail "bad option message: $err"
echo "e2e_cli: ok"
