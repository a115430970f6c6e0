#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The man page: renders without warnings, and names every subcommand and
# every long option that a subcommand's --help lists (so a new option
# cannot land undocumented).
set -uo pipefail
: "${WSNAP_BIN:?}" "${WSNAP_SOURCE_DIR:?}"
page=$WSNAP_SOURCE_DIR/doc/wsnap.1
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

if command -v groff >/dev/null; then
	warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
	[ -z "$warn" ] || fail "groff warnings: $warn"
else
	echo "e2e_doc: groff missing, rendering not checked"
fi

# roff spells '-' as '\-' in options
roff() { printf '%s' "$1" | sed 's/-/\\-/g'; }

for cmd in check ls mount export strip-prefix diff pack hydrate unmount index; do
	grep -qxF ".B wsnap $(roff "$cmd")" "$page" ||
		fail "no synopsis line for '$cmd'"
	grep -qxF ".B $(roff "$cmd")" "$page" ||
		fail "no COMMANDS entry for '$cmd'"
	help=$("$WSNAP_BIN" help "$cmd" 2>/dev/null) || continue
	for opt in $(printf '%s\n' "$help" | grep -oE -- '--[a-z][a-z-]+' |
		sort -u); do
		grep -qF -- "$(roff "$opt")" "$page" ||
			fail "'$cmd' option $opt is not in the man page"
	done
done
for word in 'EXIT STATUS' 'EXAMPLES' 'DIAGNOSTICS' 'POLICY OPTIONS'; do
	grep -q "^\.SH $word\$" "$page" || fail "no section $word"
done

[ "$fails" -eq 0 ] || { echo "e2e_doc: $fails failure(s)" >&2; exit 1; }
echo "e2e_doc: ok"
