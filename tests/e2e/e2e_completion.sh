#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The bash completion (contrib/wsnap.bash) against the built wsnap: every
# subcommand of 'wsnap --help', and every option a subcommand's --help
# names (its --long words anywhere, as e2e_doc reads them, and the short
# options of its option lines), complete; option arguments complete to
# their choices, to directories or to nothing; nothing after '--'.
set -uo pipefail
: "${WSNAP_BIN:?}" "${WSNAP_SOURCE_DIR:?}"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# shellcheck source=../../contrib/wsnap.bash
. "$WSNAP_SOURCE_DIR/contrib/wsnap.bash"
complete -p wsnap >/dev/null 2>&1 || fail "no 'complete' for wsnap"

# comp WORD...: COMPREPLY for the command line WORD..., the last word the
# one being completed, sorted and one per line in $out.
comp() {
	COMP_WORDS=("$WSNAP_BIN" "$@")
	COMP_CWORD=$#
	COMPREPLY=()
	_wsnap "$WSNAP_BIN" "${COMP_WORDS[COMP_CWORD]}" \
		"${COMP_WORDS[COMP_CWORD - 1]}"
	out=$(printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort)
}
# want WORDS... '=>' EXPECTED...: the completion of WORDS is exactly EXPECTED
want() {
	local words=() w
	while [ "$1" != '=>' ]; do words+=("$1"); shift; done
	shift
	comp "${words[@]}"
	w=$(printf '%s\n' "$@" | sed '/^$/d' | sort)
	[ "$out" = "$w" ] || fail "'wsnap ${words[*]}' completes to [$(echo \
		$out)], want [$(echo $w)]"
}
has() { grep -qxF -- "$1" <<<"$out"; }

cmds=$("$WSNAP_BIN" --help | awk '/^commands:/ { on = 1; next }
	on && /^[^ ]/ { exit } on && NF { print $1 }')
[ "$(echo "$cmds" | wc -w)" -ge 9 ] || fail "commands of --help: $cmds"
comp ''
for cmd in $cmds help; do has "$cmd" || fail "subcommand '$cmd' not offered"; done
want mou '=>' mount
want help ch '=>' check
comp --
has --help && has --version || fail "'wsnap --' offers [$(echo $out)]"

for cmd in $cmds; do
	help=$("$WSNAP_BIN" help "$cmd") || { fail "wsnap help $cmd"; continue; }
	comp "$cmd" -
	for opt in $(printf '%s\n' "$help" | grep -oE -- '--[a-z][a-z-]+' |
		sort -u) $(printf '%s\n' "$help" |
		sed -nE 's/^[[:space:]]+(-[a-zA-Z])([, ].*|$)/\1/p'); do
		has "$opt" || fail "'wsnap $cmd $opt' is not offered"
	done
	[ "$(printf '%s\n' "$out" | wc -l)" -ge 2 ] ||
		fail "'wsnap $cmd -' offers only [$out]"
done

# option arguments: the choices of the usage line, directories for DIR,
# nothing for a number; '--opt=' as readline splits it
comp pack --compress ''
has gzip && has none && has xz && has bzip2 && has lz4 && has zstd ||
	fail "pack --compress offers [$(echo $out)]"
want pack --compress = g '=>' gzip
want pack --ind '=>' --index
want mount --max-members '' '=>'
want mount -- - '=>'
work=$(mktemp -d "${TMPDIR:-/tmp}/wsnap-comp.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/dir1" "$work/dir2" && : >"$work/file1"
cd "$work" || exit 1
want hydrate --upper '' '=>' dir1 dir2
want hydrate --upper = d '=>' dir1 dir2
cd / || exit 1

[ "$fails" -eq 0 ] || { echo "e2e_completion: $fails failure(s)" >&2; exit 1; }
echo "e2e_completion: ok"
