#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: names that an overlay treats specially.
# fuse-overlayfs takes every name that starts with '.wh.' for a whiteout or
# an opaque marker ('.wh.foo' hid foo, '.wh.dir' hid dir, a bare '.wh.'
# emptied the root), and the fast 'wsnap diff ARCHIVE WORKSPACE' said
# other than --full. Now:
#  - an archive with such names hydrates faithfully with the kernel's
#    overlayfs, and fast diff equals --full over changes to them;
#  - fuse-overlayfs refuses it, in one line naming the member, with nothing
#    left mounted;
#  - over a plain archive, '.wh.' names made in a fuse-overlayfs workspace
#    (rename, link, symlink, mkdir) or found in a given upper directory
#    make the fast diff fall back to the overlay, and both agree; the
#    whiteouts fuse-overlayfs writes itself keep the fast path.
. "$(dirname "$0")/../lib/hydrate_lib.sh"

plain=$ar
wh=$work/wh.tar
python3 - "$wh" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as tf:
    for name in ["foo", ".wh.foo", "dir/", "dir/x", ".wh.dir", ".wh..wh..opq",
                 ".wh.x", ".wh.", "sub/", "sub/a", "sub/.wh..wh..opq", "d2/",
                 "d2/y", "d2/.wh.y", "plain"]:
        ti = tarfile.TarInfo(name.rstrip("/"))
        ti.mtime = 1700000000
        if name.endswith("/"):
            ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            tf.addfile(ti)
        else:
            data = (name + "\n").encode()
            ti.size, ti.mode = len(data), 0o644
            tf.addfile(ti, io.BytesIO(data))
EOF

# fell_back WS: the fast diff gave up on the upper directory (and said why)
fell_back() {
	"$W" diff -v "$ar" "$1" >/dev/null 2>"$work/v.err" || true
	grep -q "^wsnap: diff: B: .* read as a directory after all (" \
		"$work/v.err" || fail "no fall back: $(cat "$work/v.err")"
}
# kept_fast WS: it did not
kept_fast() {
	"$W" diff -v "$ar" "$1" >/dev/null 2>"$work/v.err" || true
	! grep -q "after all" "$work/v.err" ||
		fail "fell back: $(cat "$work/v.err")"
}

for kind in $kinds; do
	ws=$work/ws-$kind
	case $kind in
	kernel)
		# 1. the archive as it is, then changed over those names
		ar=$wh
		expect_rc 0 "$W" hydrate --overlay kernel "$wh" "$ws"
		expect_rc 0 "$W" diff --full "$wh" "$ws"
		same_as_full "$ws"
		[ "$(cat "$ws/.wh.foo")" = .wh.foo ] || fail "kernel: .wh.foo"
		[ "$(cat "$ws/dir/x")" = dir/x ] || fail "kernel: dir/x"
		rm "$ws/.wh.foo" "$ws/sub/.wh..wh..opq"
		printf 'changed\n' >"$ws/.wh.x"
		printf 'more\n' >>"$ws/.wh."
		rm -r "$ws/dir"
		mv "$ws/foo" "$ws/.wh.moved"
		touch "$ws/.wh.new"
		mkdir "$ws/.wh.d" "$ws/.wh.d/.wh..wh..opq"
		same_as_full "$ws"
		expect_rc 0 "$W" unmount --discard "$ws"
		ar=$plain
		;;
	fuse)
		# 2. refused, one line naming the member, nothing left behind
		expect_rc 4 "$W" hydrate --overlay fuse "$wh" "$ws"
		[ "$(wc -l <"$work/stderr")" = 1 ] &&
			grep -q "fuse-overlayfs cannot present member '.wh.' (it takes names that start with '.wh.' for whiteouts; --overlay kernel can)" \
				"$work/stderr" ||
			fail "fuse: refusal: $(cat "$work/stderr")"
		! is_mounted "$ws" || fail "fuse: refused but mounted"
		[ ! -e "$(state_of "$ws")" ] || fail "fuse: refused, state left"

		# 3. '.wh.' names made in the workspace: the fast diff falls
		#    back, and agrees; deletions alone keep the fast path
		expect_rc 0 "$W" hydrate --overlay fuse "$plain" "$ws"
		rm "$ws/many/f001.txt"
		rm -r "$ws/src/pkg/deep"
		kept_fast "$ws"
		same_as_full "$ws"
		for op in "mv plain-file .wh.moved" "ln -s x .wh.link" \
			"ln hard .wh.hard" "mkdir .wh.dir"; do
			set -- $op
			case $1 in
			mv) cp "$ws/bin/python3.11" "$ws/plain-file" ;;
			ln) [ "$2" = hard ] && touch "$ws/hard" ;;
			esac
			(cd "$ws" && "$@")
			fell_back "$ws"
			same_as_full "$ws"
			rm -rf "${ws:?}/${!#}" "$ws/hard"
		done
		expect_rc 0 "$W" unmount --discard "$ws"

		# 4. a given upper directory with '.wh.' names of its own
		for setup in "touch .wh.README" "touch .wh." \
			"touch .wh.src; mkdir src; touch src/c" \
			"mkdir -p src/pkg; touch src/pkg/.wh.main.py src/pkg/main.py" \
			"mkdir .wh.data"; do
			up=$work/up-$RANDOM
			mkdir "$up"
			(cd "$up" && eval "$setup")
			expect_rc 0 "$W" hydrate --overlay fuse --upper "$up" \
				"$plain" "$ws"
			same_as_full "$ws"
			expect_rc 0 "$W" unmount "$ws"
		done
		;;
	esac
done
echo "PASS: $name ($kinds)"
