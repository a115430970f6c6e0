#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: what issue 14 asked of remote snapshots beyond e2e_remote.sh,
# over loopback only (tests/lib/remote_lib.sh's servers):
#  - a compressed remote archive (.tar.gz, and .tar.zst as pack writes it:
#    4 MiB frames) mounted with its sidecar reads from the sidecar's seek
#    points: a file in the middle reads byte for byte as in the tree, the
#    bytes fetched (server log) are a fraction of the object, and nothing
#    is spilled (the daemon holds no file in $TMPDIR, which stays empty);
#    a .tar.gz without a sidecar reads so too, from the seek points its
#    one validating stream recorded, also after a remount (one HEAD);
#  - the remote settings on every subcommand that takes a URL: check, ls,
#    index, export, diff and hydrate with --cacert against the test's CA
#    (refused without it), --timeout ending a hung request in bounded time;
#  - an S3 endpoint over HTTPS: s3rver behind the SigV4-checking proxy
#    serving TLS with a certificate of the test's CA, through
#    AWS_ENDPOINT_URL=https://...: mount and read, a wrong secret refused;
#  - redirects (301, 302, 307, 308) are not followed: exit 4 at open with
#    one line naming the URL and the status, EIO on a read, and the
#    redirect's target never gets a request.
#
# Without the remote client (e2e_remote.sh's probe) it skips with 77.
. "$(dirname "$0")/../lib/mount_lib.sh"
. "$WSNAP_SOURCE_DIR/tests/lib/remote_lib.sh"

W=$WSNAP_BIN
step() { echo "-- $name: $1 (at $SECONDS s)"; }
rr=$WSNAP_SOURCE_DIR/tests/lib/remote_reads.py
hh=$WSNAP_SOURCE_DIR/tests/lib/hydrate_helper.py
remote_client_env
# the foreground mounts end before the servers (remote_stop_all waits for
# every child of this shell), then mount_lib.sh's cleanup
trap 'for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	remote_stop_all; cleanup' EXIT
# wsnap's own temporary files (a spill) would go here: it must stay empty
wtmp=$work/tmp
mkdir -m 0700 "$wtmp"

www=$work/www
mkdir -p "$www"
nginx_start "$www"
remote_probe "$www"

# ---- the archives ----
# big: 32 files of 2 MiB of random bytes (incompressible: the compressed
# object is about as large as the tar, 64 MiB)
tree=$work/tree
mkdir -p "$tree/data"
python3 - "$tree/data" <<'EOF'
import os, random, sys
r = random.Random(14)
for i in range(32):
    with open(os.path.join(sys.argv[1], "f%02d.bin" % i), "wb") as f:
        f.write(r.randbytes(2 << 20))
EOF
echo "a small file" >"$tree/small.txt"
"$W" pack "$tree" "$work/big.tar" || fail "pack big.tar"
gzip -1 -c "$work/big.tar" >"$www/big.tar.gz"
"$W" index "$www/big.tar.gz" -o "$www/big.tar.gz.wsnapidx" ||
	fail "index big.tar.gz"
"$W" pack --index "$tree" "$www/big.tar.zst" || fail "pack --index big.tar.zst"
[ -s "$www/big.tar.zst.wsnapidx" ] || fail "pack --index wrote no sidecar"

python3 "$helper" make "$work"
cp "$work/snap.tar" "$www/snap.tar"
"$W" index "$www/snap.tar" -o "$www/snap.tar.wsnapidx" || fail "index snap.tar"
cp "$www/snap.tar" "$www/elsewhere.tar" # a redirect's target
"$W" ls --json "$work/snap.tar" >"$work/want.ls"


# mount_fg_w URL: mount_lib.sh's mount_fg with wsnap's $TMPDIR, $wtmp
mount_fg_w() { TMPDIR=$wtmp mount_fg "$@"; }
# no_spill_w PID WHAT: mount_lib.sh's no_spill for wsnap's $TMPDIR, $wtmp
no_spill_w() { TMPDIR=$wtmp no_spill "$@"; }

# middle_read LOG OBJECT WHAT: reads 1 MiB in the middle of data/f15.bin
# and the whole of data/f16.bin (the middle of the tree) through $mnt,
# compares them with the tree, and checks that the GETs of OBJECT fetched
# less than a third of it: the spans holding those 3 MiB (4 MiB decoded
# each) and the source's read-ahead (chunks.c's window; 13 to 15 MB here),
# not the object (a spill fetches all of it)
middle_read() {
	local log=$1 obj=$2 what=$3 m b size
	size=$(stat -c %s "$www/$obj")
	m=$(log_mark "$log")
	cmp <(dd if="$tree/data/f15.bin" bs=512K skip=1 count=2 status=none) \
		<(dd if="$mnt/data/f15.bin" bs=512K skip=1 count=2 status=none) ||
		fail "$what: 1 MiB of data/f15.bin differs from the tree"
	cmp "$tree/data/f16.bin" "$mnt/data/f16.bin" ||
		fail "$what: data/f16.bin differs from the tree"
	b=$(log_bytes "$log" "$m" "\$1 == \"GET\" && \$2 ~ /\\/${obj//./\\.}\$/")
	echo "$what: 3 MiB read, $b of the object's $size bytes fetched"
	[ "$b" -gt 0 ] || fail "$what: nothing fetched: $(log_since "$log" "$m")"
	[ "$b" -lt $((size / 3)) ] ||
		fail "$what: fetched $b bytes of a $size-byte object for 3 MiB"
	[ "$(log_count "$log" "$m" '$3 == "-" && $1 == "GET"')" = 0 ] ||
		fail "$what: a GET without a range: $(log_since "$log" "$m")"
}

# ---- 1. compressed remote archives read from their seek points ----
for obj in big.tar.gz big.tar.zst; do
	step "$obj with its sidecar: read from the seek points"
	newmnt "mnt-$obj"
	m=$(log_mark "$NGINX_LOG")
	mount_fg_w "$HTTP_URL/$obj"
	n=$(log_count "$NGINX_LOG" "$m")
	[ "$n" -le 3 ] || fail "$obj: mount with a sidecar took $n requests: $(log_since "$NGINX_LOG" "$m")"
	no_spill_w "$fg" "$obj: mounted"
	middle_read "$NGINX_LOG" "$obj" "$obj"
	no_spill_w "$fg" "$obj: after the reads"
	cmp "$tree/small.txt" "$mnt/small.txt" || fail "$obj: small.txt"
	umount_fg
done
# without a sidecar: a gzip object is streamed once through the
# validation, which records its seek points (in the cache entry too); then
# it reads as with a sidecar, and a remount costs one HEAD
cp "$www/big.tar.gz" "$www/nosc.tar.gz"
step "nosc.tar.gz without a sidecar: seek points from the stream"
newmnt mnt-nosc
size=$(stat -c %s "$www/nosc.tar.gz")
m=$(log_mark "$NGINX_LOG")
mount_fg_w "$HTTP_URL/nosc.tar.gz"
b=$(log_bytes "$NGINX_LOG" "$m" '$2 ~ /\/nosc\.tar\.gz$/')
[ "$b" -le $((size + (1 << 20))) ] ||
	fail "nosc.tar.gz: the first mount fetched $b bytes of a $size-byte object"
no_spill_w "$fg" "nosc.tar.gz: mounted"
middle_read "$NGINX_LOG" nosc.tar.gz "nosc.tar.gz, first mount"
no_spill_w "$fg" "nosc.tar.gz: after the reads"
umount_fg
# the chunk cache on disk emptied: the remount's reads show what its seek
# points fetch (what a remount finds there: e2e_remote_diskcache.sh, and
# below)
rm -rf --one-file-system "$WSNAP_CACHE_DIR/chunks"
m=$(log_mark "$NGINX_LOG")
mount_fg_w "$HTTP_URL/nosc.tar.gz"
[ "$(log_count "$NGINX_LOG" "$m")" = 1 ] ||
	fail "nosc.tar.gz: remount: $(log_since "$NGINX_LOG" "$m")"
middle_read "$NGINX_LOG" nosc.tar.gz "nosc.tar.gz, remount"
no_spill_w "$fg" "nosc.tar.gz: remount"
umount_fg
# once more: the compressed spans come from the chunk cache on disk
m=$(log_mark "$NGINX_LOG")
mount_fg_w "$HTTP_URL/nosc.tar.gz"
cmp "$tree/data/f16.bin" "$mnt/data/f16.bin" ||
	fail "nosc.tar.gz, from the chunk cache: data/f16.bin differs from the tree"
[ "$(log_count "$NGINX_LOG" "$m" '$1 == "GET"')" = 0 ] ||
	fail "nosc.tar.gz: a remount fetched again what the last one read: $(log_since "$NGINX_LOG" "$m" | head -5)"
umount_fg
# the whole tree reads right too (every span, in order)
newmnt mnt-gz-all
mount_fg_w "$HTTP_URL/big.tar.gz"
diff -r --no-dereference "$tree" "$mnt" >"$work/diff" 2>&1 ||
	fail "big.tar.gz: the mount differs from the tree: $(head -5 "$work/diff")"
no_spill_w "$fg" "big.tar.gz: read whole"
umount_fg

# ---- 2. --cacert and --timeout on the subcommands that take a URL ----
step "--cacert and --timeout on every subcommand that takes a URL"
url=$HTTPS_URL/snap.tar
rc=0
timeout 60 "$W" check --no-cache "$url" 2>"$work/stderr" || rc=$?
[ $rc = 4 ] || fail "check https without the CA: exit $rc"
RO=(--cacert "$CA_PEM" --timeout 10)
timeout 60 "$W" check "${RO[@]}" --no-cache "$url" 2>"$work/stderr" ||
	fail "check --cacert: $(cat "$work/stderr")"
timeout 60 "$W" ls --json "${RO[@]}" "$url" >"$work/got.ls" 2>"$work/stderr" ||
	fail "ls --cacert: $(cat "$work/stderr")"
cmp -s "$work/got.ls" "$work/want.ls" || fail "ls --cacert $url differs"
rm -f "$work/made.wsnapidx"
timeout 60 "$W" index "${RO[@]}" "$url" -o "$work/made.wsnapidx" \
	2>"$work/stderr" || fail "index --cacert -o: $(cat "$work/stderr")"
timeout 60 "$W" index "${RO[@]}" "$HTTPS_URL/big.tar.gz" 2>"$work/stderr" ||
	fail "index --cacert (cache): $(cat "$work/stderr")"
rc=0
timeout 60 "$W" index "$HTTPS_URL/big.tar.zst" 2>"$work/stderr" || rc=$?
[ $rc = 4 ] || fail "index https without the CA: exit $rc"
rc=0
timeout 60 "$W" diff "${RO[@]}" --cache-size 2M "$url" "$work/snap.tar" \
	>"$work/got.diff" 2>"$work/stderr" || rc=$?
[ $rc = 0 ] && [ ! -s "$work/got.diff" ] ||
	fail "diff --cacert: exit $rc: $(cat "$work/got.diff" "$work/stderr")"
rm -rf "$work/exp"
timeout 60 "$W" export "${RO[@]}" --cache-size 1M "$HTTPS_URL/big.tar.zst" \
	"$work/exp" 2>"$work/stderr" || fail "export --cacert: $(cat "$work/stderr")"
diff -r --no-dereference "$tree" "$work/exp" >"$work/diff" 2>&1 ||
	fail "export --cacert of big.tar.zst differs from the tree: $(head -5 "$work/diff")"
ws=$work/ws
timeout 120 "$W" hydrate "${RO[@]}" "$url" "$ws" 2>"$work/stderr" ||
	fail "hydrate --cacert: $(cat "$work/stderr")"
python3 "$hh" compare "$work/snap.tar" "$ws" "$work/want.ls" ||
	fail "the workspace hydrated with --cacert differs from the archive"
expect_rc 0 "$W" unmount --discard "$ws"
newmnt mnt-cacert
expect_rc 0 timeout 60 "$W" mount "${RO[@]}" "$url" "$mnt"
python3 "$helper" compare "$work/snap.tar" "$mnt" "$work/want.ls" ||
	fail "mount --cacert differs"
expect_rc 0 "$W" unmount "$mnt"
# bad values are usage errors, on every one of them
for c in check ls index export diff hydrate mount; do
	expect_rc 2 "$W" $c --timeout 0 "$url" x
	grep -q "bad --timeout 0" "$work/stderr" || fail "$c --timeout 0: $(cat "$work/stderr")"
done
expect_rc 2 "$W" export --cache-size 1000 "$url" x
expect_rc 2 "$W" check --cache-size 1M "$url" # only where data is read
for c in check ls index export diff hydrate mount; do
	"$W" $c --help >"$work/help"
	grep -q -- "--timeout S" "$work/help" && grep -q -- "--cacert FILE" "$work/help" ||
		fail "$c --help does not list --timeout and --cacert"
done

# --timeout: a server that answers nothing; the default (30 s a try, 4
# tries) would outlast the 60 s bound
fault_start "$NGINX_HTTP_PORT"
fault_set mode=hang
rc=0
timeout 60 "$W" check --no-cache --timeout 1 "$FAULT_URL/snap.tar" \
	2>"$work/stderr" || rc=$?
fault_set
[ $rc = 4 ] || fail "check --timeout 1 against a hung server: exit $rc (124: not ended by the timeout): $(cat "$work/stderr")"
[ "$(wc -l <"$work/stderr")" = 1 ] && grep -qF "$FAULT_URL/snap.tar" "$work/stderr" ||
	fail "check --timeout 1: $(cat "$work/stderr")"

# ---- 4. redirects are not followed ----
step "redirects are not followed"
for code in 301 302 307 308; do
	fault_set mode=status status=$code location="$HTTP_URL/elsewhere.tar"
	m=$(log_mark "$NGINX_LOG")
	rc=0
	timeout 60 "$W" check --no-cache "$FAULT_URL/snap.tar" 2>"$work/stderr" || rc=$?
	[ $rc = 4 ] || fail "a $code at open: exit $rc: $(cat "$work/stderr")"
	[ "$(wc -l <"$work/stderr")" = 1 ] ||
		fail "a $code at open: want one line: $(cat "$work/stderr")"
	grep -qF "wsnap: $FAULT_URL/snap.tar: HTTP $code " "$work/stderr" &&
		grep -qF "(redirects are not followed)" "$work/stderr" ||
		fail "a $code at open: $(cat "$work/stderr")"
	[ "$(log_count "$NGINX_LOG" "$m" '$2 ~ /elsewhere/')" = 0 ] ||
		fail "the $code was followed: $(log_since "$NGINX_LOG" "$m")"
done
fault_set mode=status status=307 location="$HTTP_URL/elsewhere.tar"
newmnt mnt-redirect
expect_rc 4 timeout 60 "$W" mount "$FAULT_URL/snap.tar" "$mnt"
grep -qF "HTTP 307 Temporary Redirect (redirects are not followed)" "$work/stderr" ||
	fail "mount, a 307: $(cat "$work/stderr")"
! is_mounted "$mnt" || fail "mounted after a redirect"
# after the open: the data's GETs are redirected, the reads fail with EIO
fault_set
expect_rc 0 timeout 60 "$W" mount "$FAULT_URL/snap.tar" "$mnt"
fault_set 'match=^GET /snap\.tar ' mode=status status=307 \
	location="$HTTP_URL/elsewhere.tar"
m=$(log_mark "$NGINX_LOG")
timeout 60 python3 "$rr" check eio "$work/snap.tar" "$mnt" src/pkg/main.py ||
	fail "a read redirected: not EIO"
[ "$(log_count "$NGINX_LOG" "$m" '$2 ~ /elsewhere/')" = 0 ] ||
	fail "a read followed the redirect: $(log_since "$NGINX_LOG" "$m")"
fault_set
expect_rc 0 "$W" unmount "$mnt"

# ---- 3. an S3 endpoint over HTTPS ----
step "S3 over HTTPS"
KEY=AKIDWSNAPTLS SECRET=wsnap-tls-secret-4Jx/q TOKEN=wsnap-tls-session-token
REGION=eu-north-1
s3_start snaps "$KEY" "$SECRET" "$TOKEN" --region "$REGION" \
	--tls-cert "$CERT_PEM" --tls-key "$KEY_PEM"
case $S3_URL in https://*) ;; *) fail "the S3 proxy is not HTTPS: $S3_URL" ;; esac
for a in big.tar.zst big.tar.zst.wsnapidx snap.tar; do
	s3_put snaps "$a" "$www/$a"
done
S3_ENV=(AWS_ENDPOINT_URL="$S3_URL" AWS_REGION="$REGION"
	AWS_ACCESS_KEY_ID="$KEY" AWS_SECRET_ACCESS_KEY="$SECRET"
	AWS_SESSION_TOKEN="$TOKEN")
rc=0
env "${S3_ENV[@]}" timeout 60 "$W" check --no-cache s3://snaps/snap.tar \
	2>"$work/stderr" || rc=$?
[ $rc = 4 ] || fail "s3 over https without the CA: exit $rc"
newmnt mnt-s3tls
m=$(log_mark "$S3_LOG")
export "${S3_ENV[@]}" AWS_CA_BUNDLE="$CA_PEM"
mount_fg_w s3://snaps/big.tar.zst
unset AWS_ENDPOINT_URL AWS_REGION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY \
	AWS_SESSION_TOKEN AWS_CA_BUNDLE
[ "$(log_count "$S3_LOG" "$m")" -le 3 ] ||
	fail "s3 over https: mount took $(log_count "$S3_LOG" "$m") requests"
[ "$(log_count "$S3_LOG" "$m" '$6 != "ok"')" = 0 ] ||
	fail "s3 over https: requests not signed right: $(log_since "$S3_LOG" "$m")"
middle_read "$S3_LOG" big.tar.zst "s3 over https, big.tar.zst"
no_spill_w "$fg" "s3 over https"
umount_fg
env "${S3_ENV[@]}" timeout 60 "$W" check --no-cache --cacert "$CA_PEM" \
	s3://snaps/snap.tar 2>"$work/stderr" ||
	fail "s3 over https, check --cacert: $(cat "$work/stderr")"
rc=0
env "${S3_ENV[@]}" AWS_SECRET_ACCESS_KEY=wrong-secret timeout 60 "$W" check \
	--no-cache --cacert "$CA_PEM" s3://snaps/snap.tar 2>"$work/stderr" || rc=$?
[ $rc = 4 ] && grep -q "HTTP 403" "$work/stderr" ||
	fail "s3 over https with a wrong secret: exit $rc: $(cat "$work/stderr")"
echo "$name: ok ($SECONDS s)"
