#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: the on-disk chunk cache of remote objects (cli.md "Remote
# snapshots", core/remote/pieces.h), over nginx on loopback (request counts
# from its log):
#  - a second mount, and a hydrate, of the same URL reading the same files
#    make no request for the archive's bytes (only the HEAD);
#  - pieces flipped, truncated, swapped for another's, or replaced by a
#    symlink or a FIFO are not served: the bytes are fetched again, right
#    byte for byte, and the pieces rewritten;
#  - an object replaced on the server (another ETag) never gets the old
#    object's pieces;
#  - a cache directory writable by others, owned by another user, or a
#    chunks/ that is a symlink is not used (-v says why), and reads work;
#  - a cache that cannot be written (a directory made read-only) never
#    fails a read, and -v says why;
#  - the bound: reading more than cache_size leaves at most cache_size of
#    pieces, also with two mounts of the object at once;
#  - --no-cache writes nothing.
# Until wsnap has remote sources it exits 77 (ctest: skipped).
. "$(dirname "$0")/../lib/mount_lib.sh"
. "$WSNAP_SOURCE_DIR/tests/lib/remote_lib.sh"

W=$WSNAP_BIN
step() { echo "-- $name: $1 (at $SECONDS s)"; }
rr=$WSNAP_SOURCE_DIR/tests/lib/remote_reads.py
hh=$WSNAP_SOURCE_DIR/tests/lib/hydrate_helper.py
remote_client_env

www=$work/www
mkdir -p "$www"
nginx_start "$www"
remote_probe "$www"

python3 "$helper" make "$work"
python3 "$rr" make "$work"
cp "$work/many.tar" "$work/faults.tar" "$www/"
cp "$work/faults.tar" "$www/nosc.tar" # no sidecar: no digests to check
for a in many.tar faults.tar; do
	"$W" index "$www/$a" -o "$www/$a.wsnapidx" || fail "wsnap index $a"
done

# cache DIR: the cache directory of what follows (made 0700 when missing)
cache() {
	export WSNAP_CACHE_DIR=$work/$1
	mkdir -p -m 0700 "$WSNAP_CACHE_DIR"
	chunks=$WSNAP_CACHE_DIR/chunks
}
# piece_bytes: bytes of the piece files under $chunks (0 when none)
piece_bytes() {
	[ -d "$chunks" ] || { echo 0; return; }
	find "$chunks" -type f -name '*-*' -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'
}
pieces() { [ -d "$chunks" ] && find "$chunks" -type f -name '*-*' | wc -l || echo 0; }
# gets LOG MARK NAME: GETs of NAME itself (not its sidecar)
gets() { log_count "$NGINX_LOG" "$1" "\$1 == \"GET\" && \$2 ~ /\\/$2\$/"; }
# unmount_wait MNT: unmounts MNT and waits (at most 30 s) for its daemon
# to exit: it writes what it still has queued as it ends, which the next
# mount is to find (bench/measure.py --daemons finds it by its arguments)
unmount_wait() {
	local d i
	d=$(python3 "$WSNAP_SOURCE_DIR/bench/measure.py" --daemons "$1")
	expect_rc 0 "$W" unmount "$1"
	[ "$d" != none ] || return 0
	read -r -a d <<<"$d"
	unset 'd[-1]'
	for i in $(seq 300); do
		kill -0 "${d[@]}" 2>/dev/null || return 0
		sleep 0.1
	done
	fail "the daemon of $1 did not exit"
}
# read_all ARCHIVE URL PATH...: mounts URL (more options in $mopts),
# reads the paths (every byte checked), unmounts
read_all() {
	local a=$1 u=$2
	shift 2
	newmnt "mnt-$((++nm))"
	expect_rc 0 timeout 120 "$W" mount "${mopts[@]}" "$u" "$mnt"
	timeout 120 python3 "$rr" check ok "$a" "$mnt" "$@" ||
		fail "reads of $u through $mnt"
	unmount_wait "$mnt"
}
nm=0 mopts=()

paths=()
for i in $(seq 0 9 399); do paths+=("d$((i % 8))/f$(printf %03d "$i").txt"); done
big=(f01 f04 f07 f10)

# ---- a second mount and a hydrate read from the disk ----
step "a second mount, and a hydrate, fetch none of the bytes again"
cache c-again
read_all "$work/many.tar" "$HTTP_URL/many.tar" "${paths[@]}"
read_all "$work/faults.tar" "$HTTP_URL/faults.tar" "${big[@]}"
[ "$(pieces)" -gt 0 ] || fail "no pieces under $chunks"
m=$(log_mark "$NGINX_LOG")
read_all "$work/many.tar" "$HTTP_URL/many.tar" "${paths[@]}"
read_all "$work/faults.tar" "$HTTP_URL/faults.tar" "${big[@]}"
n=$(log_count "$NGINX_LOG" "$m")
[ "$(gets "$m" many.tar)" = 0 ] && [ "$(gets "$m" faults.tar)" = 0 ] ||
	fail "a second mount fetched again: $(log_since "$NGINX_LOG" "$m" | head -5)"
# what metadata needs only: a HEAD and the sidecar for each
[ "$n" -le 4 ] || fail "a second mount of 2 objects took $n requests: $(log_since "$NGINX_LOG" "$m")"
m=$(log_mark "$NGINX_LOG")
ws=$work/ws-again
timeout 120 "$W" hydrate "$HTTP_URL/many.tar" "$ws" 2>"$work/stderr" ||
	fail "hydrate: $(cat "$work/stderr")"
timeout 120 python3 "$rr" check ok "$work/many.tar" "$ws" "${paths[@]}" ||
	fail "reads of the hydrated workspace"
expect_rc 0 "$W" unmount --discard "$ws"
[ "$(gets "$m" many.tar)" = 0 ] ||
	fail "a hydrate after a mount fetched again: $(log_since "$NGINX_LOG" "$m" | head -5)"

# ---- bad pieces are not served ----
step "pieces flipped, truncated, swapped, a symlink, a FIFO: not served"
sleep 1.1 # a later second for -newer
touch "$work/nosc.mark"
# without a sidecar, so that only the pieces' own checks stand between
# a bad piece and a read
read_all "$work/faults.tar" "$HTTP_URL/nosc.tar" "${big[@]}"
key=$(find "$chunks" -mindepth 1 -maxdepth 1 -type d -newer "$work/nosc.mark")
[ "$(echo "$key" | wc -w)" = 1 ] || fail "want one new object directory, have: $key"
mapfile -t files < <(find "$key" -type f -name '*-*' -size +1000k | sort)
[ ${#files[@]} -ge 5 ] || fail "want 5 pieces of 1 MiB or more, have ${#files[@]}"
printf 'XXXXXXXX' | dd of="${files[0]}" bs=1 seek=300000 conv=notrunc status=none
truncate -s 500000 "${files[1]}"
cp "${files[3]}" "${files[2]}" # another piece's file under this name
ln -sf "${files[4]}" "${files[3]}"
rm "${files[4]}" && mkfifo "${files[4]}"
m=$(log_mark "$NGINX_LOG")
read_all "$work/faults.tar" "$HTTP_URL/nosc.tar" "${big[@]}"
[ "$(gets "$m" nosc.tar)" -ge 1 ] ||
	fail "bad pieces, yet nothing fetched again"
# removed and rewritten good: a third mount fetches nothing
[ -z "$(find "$chunks" ! -type f ! -type d)" ] ||
	fail "a symlink or FIFO left among the pieces: $(find "$chunks" ! -type f ! -type d)"
m=$(log_mark "$NGINX_LOG")
read_all "$work/faults.tar" "$HTTP_URL/nosc.tar" "${big[@]}"
[ "$(gets "$m" nosc.tar)" = 0 ] ||
	fail "the bad pieces were not rewritten: $(log_since "$NGINX_LOG" "$m" | head -5)"

# ---- an object replaced on the server gets none of the old pieces ----
step "an object replaced on the server (another ETag)"
cache c-replaced
cp "$work/faults.tar" "$www/swap.tar"
touch -d @1600000000 "$www/swap.tar"
read_all "$work/faults.tar" "$HTTP_URL/swap.tar" "${big[@]}"
before=$(find "$chunks" -mindepth 1 -maxdepth 1 -type d | wc -l)
cp "$work/faults-v2.tar" "$www/swap.tar.new"
touch -d @1600000500 "$www/swap.tar.new"
mv "$www/swap.tar.new" "$www/swap.tar"
m=$(log_mark "$NGINX_LOG")
read_all "$work/faults-v2.tar" "$HTTP_URL/swap.tar" "${big[@]}"
[ "$(gets "$m" swap.tar)" -ge ${#big[@]} ] ||
	fail "the new object's reads came from the old one's pieces"
after=$(find "$chunks" -mindepth 1 -maxdepth 1 -type d | wc -l)
[ "$after" = $((before + 1)) ] || fail "object directories: $before, then $after"

# ---- a cache directory that is not ours to use ----
step "a cache directory writable by others, owned by another, a symlink"
for how in mode owner link; do
	cache "c-$how"
	case $how in
	mode) chmod 0777 "$WSNAP_CACHE_DIR" ;;
	owner) [ "$(id -u)" = 0 ] || continue
		chown 65534 "$WSNAP_CACHE_DIR" ;;
	link) mkdir -m 0700 "$work/elsewhere"
		ln -s "$work/elsewhere" "$chunks" ;;
	esac
	rm -rf "$work/exp-$how"
	timeout 120 "$W" export -v "$HTTP_URL/many.tar" "$work/exp-$how" \
		2>"$work/stderr" || fail "$how: export: $(cat "$work/stderr")"
	grep -q 'chunk cache .* not used' "$work/stderr" ||
		fail "$how: -v does not say the chunk cache is not used: $(cat "$work/stderr")"
	[ "$(pieces)" = 0 ] && [ -z "$(ls -A "$work/elsewhere" 2>/dev/null)" ] ||
		fail "$how: pieces written in a cache not to be used"
	cmp -s "$work/exp-$how/d0/f000.txt" <(tar -xOf "$work/many.tar" d0/f000.txt) ||
		fail "$how: export differs"
done

# ---- a cache that cannot be written never fails a read ----
step "a cache that cannot be written"
cache c-ro
read_all "$work/many.tar" "$HTTP_URL/many.tar" "${paths[0]}"
d=$(find "$chunks" -mindepth 1 -maxdepth 1 -type d | head -1)
chmod 0500 "$d"
if [ "$(id -u)" != 0 ]; then # root writes there all the same
	rm -rf "$work/exp-ro"
	timeout 120 "$W" export -v "$HTTP_URL/many.tar" "$work/exp-ro" \
		2>"$work/stderr" || fail "export over a read-only cache: $(cat "$work/stderr")"
	grep -q 'chunk cache: cannot write' "$work/stderr" ||
		fail "-v does not say the cache cannot be written: $(cat "$work/stderr")"
	cmp -s "$work/exp-ro/d0/f000.txt" <(tar -xOf "$work/many.tar" d0/f000.txt) ||
		fail "export over a read-only cache differs"
fi
chmod 0700 "$d"
# a full disk (root can make one: a small tmpfs, taken down by cleanup
# also on failure)
mkdir -p "$work/full"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=64k tmpfs "$work/full" 2>/dev/null; then
	mkdir -m 0700 "$work/full/c"
	head -c 60000 /dev/zero >"$work/full/c/filler" || true
	rm -rf "$work/exp-full"
	WSNAP_CACHE_DIR=$work/full/c timeout 120 "$W" export -v --no-progress \
		"$HTTP_URL/faults.tar" "$work/exp-full" 2>"$work/stderr" ||
		fail "export over a full cache: $(cat "$work/stderr")"
	grep -q 'chunk cache: cannot write' "$work/stderr" ||
		fail "-v does not say the full cache cannot be written: $(cat "$work/stderr")"
	cmp -s "$work/exp-full/f07" <(tar -xOf "$work/faults.tar" f07) ||
		fail "export over a full cache differs"
	umount "$work/full"
fi

# ---- the bound, also with two mounts at once ----
step "the bound: more than cache_size read, two mounts at once"
cache c-bound
all=()
for i in $(seq 1 34); do all+=("$(printf f%02d "$i")"); done
mopts=(-o cache_size=8M)
read_all "$work/faults.tar" "$HTTP_URL/faults.tar" "${all[@]}"
b=$(piece_bytes)
[ "$b" -le $((8 << 20)) ] || fail "pieces take $b bytes, cache_size is 8 MiB"
[ "$b" -ge $((2 << 20)) ] || fail "pieces take $b bytes: the bound removed too much"
newmnt mnt-two-a
a=$mnt
newmnt mnt-two-b
expect_rc 0 timeout 120 "$W" mount "${mopts[@]}" "$HTTP_URL/faults.tar" "$a"
expect_rc 0 timeout 120 "$W" mount "${mopts[@]}" "$HTTP_URL/faults.tar" "$mnt"
timeout 120 python3 "$rr" check ok "$work/faults.tar" "$a" "${all[@]}" &
pa=$!
bg_pids+=("$pa")
timeout 120 python3 "$rr" check ok "$work/faults.tar" "$mnt" $(printf '%s\n' "${all[@]}" | tac) ||
	fail "reads of the second of two mounts at once"
wait "$pa" || fail "reads of the first of two mounts at once"
unmount_wait "$a"
unmount_wait "$mnt"
b=$(piece_bytes)
# each measures again as it ends when it wrote since it last did
[ "$b" -le $((8 << 20)) ] || fail "two mounts at once: pieces take $b bytes, cache_size is 8 MiB"
mopts=()

# ---- --no-cache writes nothing ----
step "--no-cache writes nothing"
cache c-none
newmnt mnt-none
expect_rc 0 timeout 120 "$W" mount --no-cache "$HTTP_URL/faults.tar" "$mnt"
timeout 120 python3 "$rr" check ok "$work/faults.tar" "$mnt" "${big[@]}" ||
	fail "reads with --no-cache"
expect_rc 0 "$W" unmount "$mnt"
ws=$work/ws-none
timeout 120 "$W" hydrate --no-cache "$HTTP_URL/many.tar" "$ws" 2>"$work/stderr" ||
	fail "hydrate --no-cache: $(cat "$work/stderr")"
timeout 120 python3 "$rr" check ok "$work/many.tar" "$ws" "${paths[@]}" ||
	fail "reads of the workspace hydrated with --no-cache"
expect_rc 0 "$W" unmount --discard "$ws"
[ ! -e "$chunks" ] || fail "--no-cache made $chunks: $(find "$chunks" | head)"
echo "PASS: $name"
