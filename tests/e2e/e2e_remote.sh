#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: remote snapshots (issue 14, cli.md "Remote snapshots"), over
# loopback only, with the servers of tests/lib/remote_lib.sh: nginx (HTTP,
# HTTPS with the test's CA) and s3rver behind the SigV4-checking proxy.
# Through http://, https:// and s3://: ls, check, diff, export, mount and
# hydrate agree byte for byte with the local archive, with a sidecar
# (URL.wsnapidx) and without; request counts from the servers' logs (a
# mount with a sidecar in at most 3 requests, a remount without one in one
# HEAD, scattered reads within the bytes they need); 403 and 404 at mount
# exit 4 with one line naming the URL without credentials; credentials in
# no process's arguments, mount source or state file; a certificate from
# no known CA refused; the fault proxy's drops, delays, 500s, short bodies,
# hangs, a swapped object and a server gone give retries or EIO, never a
# wrong byte, never a hang (every wait bounded).
#
# Until wsnap has remote sources it says 'skip: remote sources not built'
# and exits 77 (ctest: skipped); with WSNAP_REQUIRE_REMOTE=1 that fails.
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
remote_probe "$www" # is the client there?

python3 "$helper" make "$work"
python3 "$rr" make "$work"
for a in snap.tar other.tar faults.tar faults-v2.tar many.tar; do
	cp "$work/$a" "$www/$a"
done
cp "$work/snap.tar" "$www/plain.tar" # never gets a sidecar
cp "$work/snap.tar.gz" "$www/snap.tar.gz"
for a in snap.tar faults.tar many.tar; do
	"$W" index "$www/$a" -o "$www/$a.wsnapidx" || fail "wsnap index $a"
done
# faults-v2.tar is swapped in for faults.tar: it is served with the
# sidecar of the object it replaces; nginx's ETag is the mtime's seconds and
# the size, the same for both unless the mtimes differ
cp "$www/faults.tar.wsnapidx" "$www/faults-v2.tar.wsnapidx"
touch -d @1600000000 "$www/faults-v2.tar"
# tampered.tar: snap.tar with bytes of big/multi.bin changed (headers
# intact), published with snap.tar's sidecar: its digests must catch it
cp "$www/snap.tar" "$www/tampered.tar"
off=$(python3 "$helper" offset "$www/snap.tar" big/multi.bin)
printf 'tampered' | dd of="$www/tampered.tar" bs=1 seek=$((off + 3000000)) \
	conv=notrunc status=none
cp "$www/snap.tar.wsnapidx" "$www/tampered.tar.wsnapidx"
SIZE=$(stat -c %s "$www/snap.tar")

KEY=AKIDWSNAPE2E SECRET=wsnap-e2e-secret-Kq81/z TOKEN=wsnap-e2e-session-token
REGION=eu-west-3
s3_start snaps "$KEY" "$SECRET" "$TOKEN" --region "$REGION"
for a in snap.tar plain.tar other.tar many.tar snap.tar.wsnapidx \
	many.tar.wsnapidx; do
	s3_put snaps "$a" "$www/$a"
done
S3_ENV=(AWS_ENDPOINT_URL_S3="$S3_URL" AWS_REGION="$REGION"
	AWS_ACCESS_KEY_ID="$KEY" AWS_SECRET_ACCESS_KEY="$SECRET"
	AWS_SESSION_TOKEN="$TOKEN")

# src NAME ARCHIVE: sets $url, $slog (the log that counts its requests)
# and $senv (its environment) for the source NAME (http, https, s3)
src() {
	case $1 in
	http) url=$HTTP_URL/$2 slog=$NGINX_LOG senv=() ;;
	https) url=$HTTPS_URL/$2 slog=$NGINX_LOG senv=(CURL_CA_BUNDLE="$CA_PEM") ;;
	s3) url=s3://snaps/$2 slog=$S3_LOG senv=("${S3_ENV[@]}") ;;
	esac
}
# on CMD...: CMD in the environment of the current source
on() { env "${senv[@]}" timeout 120 "$@"; }
# one_line WHAT URL: $work/stderr is one line, 'wsnap: ...', naming URL
one_line() {
	[ "$(wc -l <"$work/stderr")" = 1 ] ||
		fail "$1: want one line, got: $(cat "$work/stderr")"
	grep -q '^wsnap: ' "$work/stderr" || fail "$1: $(cat "$work/stderr")"
	grep -qF "$2" "$work/stderr" || fail "$1: the message does not name $2: $(cat "$work/stderr")"
}
no_secrets() { # FILE...: none holds a credential
	local s
	for s in "$SECRET" "$TOKEN" wsnap-url-password; do
		! grep -qaF -- "$s" "$@" || fail "a credential in $*: $(grep -aF -- "$s" "$@" | head -3)"
	done
}
# archive_gets LOG MARK NAME: GETs of NAME itself (not its sidecar)
archive_gets() { log_count "$1" "$2" "\$1 == \"GET\" && \$2 ~ /\\/$3\$/"; }

"$W" ls --json "$work/snap.tar" >"$work/want.ls"
"$W" check --json "$work/snap.tar" >"$work/want.check"
rc=0
"$W" diff "$work/snap.tar" "$work/other.tar" >"$work/want.diff" || rc=$?
[ $rc = 1 ] || fail "local diff exit $rc"

for s in http https s3; do
	# ---- with a sidecar: mount in at most 3 requests, nothing per member ----
	step "$s: with a sidecar"
	src $s snap.tar
	newmnt "mnt-$s"
	opts=()
	[ $s = https ] && opts=(-o "cacert=$CA_PEM") # -o, not the environment
	m=$(log_mark "$slog")
	if [ $s = https ]; then
		expect_rc 0 timeout 120 "$W" mount "${opts[@]}" "$url" "$mnt"
	else
		expect_rc 0 on "$W" mount "$url" "$mnt"
	fi
	n=$(log_count "$slog" "$m")
	[ "$n" -le 3 ] || fail "$s: mount with a sidecar took $n requests: $(log_since "$slog" "$m")"
	[ "$(archive_gets "$slog" "$m" snap.tar)" -le 0 ] ||
		fail "$s: mount with a sidecar read the archive: $(log_since "$slog" "$m")"
	python3 "$helper" compare "$work/snap.tar" "$mnt" "$work/want.ls" ||
		fail "$s: mount differs from the archive"
	[ "$(findmnt -n -o SOURCE --mountpoint "$mnt")" = "$url" ] ||
		fail "$s: mount source '$(findmnt -n -o SOURCE --mountpoint "$mnt")', want '$url'"
	expect_rc 0 "$W" unmount "$mnt"

	# ---- without: streamed once, cached; a remount costs one HEAD ----
	step "$s: without"
	src $s plain.tar
	newmnt "mnt-$s-plain"
	m=$(log_mark "$slog")
	if [ $s = https ]; then
		expect_rc 0 timeout 120 "$W" mount "${opts[@]}" "$url" "$mnt"
	else
		expect_rc 0 on "$W" mount "$url" "$mnt"
	fi
	b=$(log_bytes "$slog" "$m" '$2 ~ /\/plain\.tar$/')
	[ "$b" -le $((SIZE + (1 << 20))) ] ||
		fail "$s: first mount without a sidecar fetched $b bytes of a $SIZE-byte archive"
	python3 "$helper" compare "$work/snap.tar" "$mnt" "$work/want.ls" ||
		fail "$s: mount without a sidecar differs from the archive"
	expect_rc 0 "$W" unmount "$mnt"
	m=$(log_mark "$slog")
	if [ $s = https ]; then
		expect_rc 0 timeout 120 "$W" mount "${opts[@]}" "$url" "$mnt"
	else
		expect_rc 0 on "$W" mount "$url" "$mnt"
	fi
	[ "$(log_count "$slog" "$m")" = 1 ] && [ "$(log_count "$slog" "$m" '$1 == "HEAD"')" = 1 ] ||
		fail "$s: remount without a sidecar: $(log_since "$slog" "$m")"
	expect_rc 0 "$W" unmount "$mnt"

	# ---- ls, check, diff, export, index answer as for the local file ----
	step "$s: ls, check, diff, export, index answer as for the local file"
	for a in snap.tar plain.tar; do
		src $s $a
		on "$W" ls --json "$url" >"$work/got.ls" 2>"$work/stderr" ||
			fail "$s: ls $url: $(cat "$work/stderr")"
		cmp -s "$work/got.ls" "$work/want.ls" || fail "$s: ls --json $url differs"
		on "$W" check --json "$url" >"$work/got.check" 2>"$work/stderr" ||
			fail "$s: check $url: $(cat "$work/stderr")"
		cmp -s "$work/got.check" "$work/want.check" || fail "$s: check --json $url differs"
		rc=0
		on "$W" diff "$url" "$work/snap.tar" >"$work/got.diff" 2>"$work/stderr" || rc=$?
		[ $rc = 0 ] && [ ! -s "$work/got.diff" ] ||
			fail "$s: diff $url against its own file: exit $rc: $(cat "$work/got.diff" "$work/stderr")"
		rc=0
		on "$W" diff "$url" "$work/other.tar" >"$work/got.diff" 2>"$work/stderr" || rc=$?
		[ $rc = 1 ] && cmp -s "$work/got.diff" "$work/want.diff" ||
			fail "$s: diff $url other.tar: exit $rc, $(diff "$work/want.diff" "$work/got.diff" | head -5) $(cat "$work/stderr")"
	done
	src $s snap.tar
	rm -rf "$work/exp-$s"
	on "$W" export "$url" "$work/exp-$s" 2>"$work/stderr" ||
		fail "$s: export $url: $(cat "$work/stderr")"
	[ -d "$work/exp-local" ] || "$W" export "$work/snap.tar" "$work/exp-local"
	python3 "$hh" tree "$work/exp-local" "$work/exp-$s" ||
		fail "$s: export of $url differs from the local export"
	on "$W" index "$url" -o "$work/made-$s.wsnapidx" 2>"$work/stderr" ||
		fail "$s: index $url: $(cat "$work/stderr")"
	on "$W" ls --json --index "$work/made-$s.wsnapidx" "$url" >"$work/got.ls" \
		2>"$work/stderr" || fail "$s: ls --index: $(cat "$work/stderr")"
	cmp -s "$work/got.ls" "$work/want.ls" || fail "$s: ls with the sidecar made from $url differs"

	# ---- hydrate: the workspace reads as the archive; its diff as local ----
	step "$s: hydrate"
	ws=$work/ws-$s
	on "$W" hydrate "$url" "$ws" 2>"$work/stderr" ||
		fail "$s: hydrate $url: $(cat "$work/stderr")"
	python3 "$hh" compare "$work/snap.tar" "$ws" "$work/want.ls" ||
		fail "$s: hydrated workspace differs from the archive"
	echo changed >"$ws/src/pkg/main.py"
	rm "$ws/many/f003.txt"
	rc1=0 rc2=0
	on "$W" diff "$url" "$ws" >"$work/d1" 2>"$work/stderr" || rc1=$?
	"$W" diff "$work/snap.tar" "$ws" >"$work/d2" 2>>"$work/stderr" || rc2=$?
	[ $rc1 = 1 ] && [ $rc2 = 1 ] && cmp -s "$work/d1" "$work/d2" ||
		fail "$s: diff of the workspace: exit $rc1/$rc2: $(cat "$work/d1" "$work/d2" "$work/stderr")"
	grep -q 'src/pkg/main.py' "$work/d1" || fail "$s: the change is not in the diff"
	st=$(dirname "$ws")/.$(basename "$ws").wsnap
	[ -f "$st/state" ] || fail "$s: no state file at $st/state"
	no_secrets "$st/state"
	expect_rc 0 "$W" unmount --discard "$ws"
done

# ---- a compressed archive without a sidecar ----
step "a compressed archive without a sidecar"
newmnt mnt-gz
expect_rc 0 timeout 120 "$W" mount "$HTTP_URL/snap.tar.gz" "$mnt"
python3 "$helper" compare "$work/snap.tar.gz" "$mnt" "$work/want.ls" ||
	fail "gz: mount differs"
expect_rc 0 "$W" unmount "$mnt"
m=$(log_mark "$NGINX_LOG")
expect_rc 0 timeout 120 "$W" mount "$HTTP_URL/snap.tar.gz" "$mnt"
[ "$(log_count "$NGINX_LOG" "$m")" = 1 ] || fail "gz: remount: $(log_since "$NGINX_LOG" "$m")"
expect_rc 0 "$W" unmount "$mnt"

# ---- reads fetch what is read: scattered small files, a large member ----
step "reads fetch what is read"
newmnt mnt-many
expect_rc 0 timeout 120 "$W" mount -o cache_size=4194304 "$HTTP_URL/many.tar" "$mnt"
paths=()
for i in $(seq 0 9 399); do paths+=("d$((i % 8))/f$(printf %03d "$i").txt"); done
m=$(log_mark "$NGINX_LOG")
timeout 60 python3 "$rr" check ok "$work/many.tar" "$mnt" "${paths[@]}" ||
	fail "scattered reads"
n=$(log_count "$NGINX_LOG" "$m")
b=$(log_bytes "$NGINX_LOG" "$m")
need=$(python3 - "$work/many.tar" "${paths[@]}" <<'PY'
import sys, tarfile
want = set(sys.argv[2:])
with tarfile.open(sys.argv[1]) as tf:
    print(sum(m.size for m in tf.getmembers() if m.name in want))
PY
)
[ "$n" -le ${#paths[@]} ] || fail "${#paths[@]} scattered files took $n requests"
[ "$b" -le $((need + n * 65536)) ] ||
	fail "${#paths[@]} scattered files ($need bytes) fetched $b bytes in $n requests"
[ "$(log_count "$NGINX_LOG" "$m" '$4 != 206')" = 0 ] ||
	fail "reads that are not ranges: $(log_since "$NGINX_LOG" "$m" | awk -F'\t' '$4 != 206' | head -3)"
# every request pinned to the version mounted: nginx answers 412 otherwise,
# as the fault section checks; here: a large member in about 1 MiB chunks
expect_rc 0 "$W" unmount "$mnt"
newmnt mnt-big
expect_rc 0 timeout 120 "$W" mount -o cache_size=2097152 "$HTTP_URL/snap.tar" "$mnt"
m=$(log_mark "$NGINX_LOG")
timeout 60 python3 "$rr" check ok "$work/snap.tar" "$mnt" big/multi.bin ||
	fail "big/multi.bin through a 2 MiB chunk cache"
n=$(log_count "$NGINX_LOG" "$m")
b=$(log_bytes "$NGINX_LOG" "$m")
bs=$(python3 -c 'import sys, tarfile; print(tarfile.open(sys.argv[1]).getmember("big/multi.bin").size)' "$work/snap.tar")
[ "$n" -le $((bs / 1048576 + 3)) ] || fail "a $bs-byte member took $n requests"
[ "$b" -le $((bs + (2 << 20))) ] || fail "a $bs-byte member fetched $b bytes"
expect_rc 0 "$W" unmount "$mnt"
# one request for a chunk however many threads want it: 8 readers of one
# MiB of a fresh mount at once (that MiB spans at most 2 chunks)
newmnt mnt-together
expect_rc 0 timeout 120 "$W" mount "$HTTP_URL/snap.tar" "$mnt"
m=$(log_mark "$NGINX_LOG")
timeout 60 python3 "$rr" together "$work/snap.tar" "$mnt" big/multi.bin 8 131072 ||
	fail "8 readers of one chunk"
n=$(log_count "$NGINX_LOG" "$m" '$1 == "GET" && $2 == "/snap.tar"')
[ "$n" -le 3 ] || fail "8 readers of one MiB made $n requests: $(log_since "$NGINX_LOG" "$m")"
expect_rc 0 "$W" unmount "$mnt"
# the sidecar's digests are checked before anything is served
newmnt mnt-tampered
expect_rc 0 timeout 120 "$W" mount "$HTTP_URL/tampered.tar" "$mnt"
timeout 60 python3 "$helper" read-eio "$www/tampered.tar" "$mnt" big/multi.bin ||
	fail "tampered data served"
timeout 60 python3 "$rr" check ok "$work/snap.tar" "$mnt" src/pkg/main.py many/f010.txt ||
	fail "the members that were not tampered with"
expect_rc 0 "$W" unmount "$mnt"

# ---- TLS: a certificate from no CA we know is refused; the CA variables ----
step "TLS"
for how in none AWS_CA_BUNDLE CURL_CA_BUNDLE SSL_CERT_FILE; do
	rc=0
	if [ $how = none ]; then
		timeout 60 "$W" check --no-cache "$HTTPS_URL/snap.tar" 2>"$work/stderr" || rc=$?
		[ $rc = 4 ] || fail "https without the CA: exit $rc"
		one_line "https without the CA" "$HTTPS_URL/snap.tar"
	else
		env "$how=$CA_PEM" timeout 60 "$W" check --no-cache "$HTTPS_URL/snap.tar" \
			2>"$work/stderr" || fail "https with $how: $(cat "$work/stderr")"
	fi
done
newmnt mnt-noca
expect_rc 4 timeout 60 "$W" mount "$HTTPS_URL/snap.tar" "$mnt"
one_line "mount https without the CA" "$HTTPS_URL/snap.tar"
! is_mounted "$mnt" || fail "mounted without the CA"

# ---- 403 and 404 at mount: exit 4, one line naming the URL ----
step "403 and 404 at mount"
newmnt mnt-refused
expect_rc 4 timeout 60 "$W" mount "$HTTP_URL/nothing.tar" "$mnt"
one_line "404" "$HTTP_URL/nothing.tar"
hostport=${HTTP_URL#http://}
expect_rc 4 timeout 60 "$W" mount "http://wsnapuser:wsnap-url-password@$hostport/nothing.tar" "$mnt"
one_line "404 with credentials in the URL" "$hostport/nothing.tar"
no_secrets "$work/stderr"
! grep -q wsnapuser "$work/stderr" || fail "the URL's user in the message: $(cat "$work/stderr")"
src s3 snap.tar
senv=(AWS_ENDPOINT_URL_S3="$S3_URL" AWS_REGION="$REGION" AWS_ACCESS_KEY_ID="$KEY"
	AWS_SECRET_ACCESS_KEY=wrong-secret AWS_SESSION_TOKEN="$TOKEN")
expect_rc 4 on "$W" mount "$url" "$mnt"
one_line "s3 wrong secret" "$url"
no_secrets "$work/stderr"
! grep -q wrong-secret "$work/stderr" || fail "the secret in the message"
senv=(AWS_ENDPOINT_URL_S3="$S3_URL" AWS_REGION="$REGION") # anonymous
expect_rc 4 on "$W" mount "$url" "$mnt"
one_line "s3 anonymous" "$url"
src s3 nothing.tar
expect_rc 4 on "$W" mount "$url" "$mnt"
one_line "s3 404" "$url"
! is_mounted "$mnt" || fail "a refused source was mounted"

# ---- S3 settings as the AWS tools read them ----
step "S3 settings as the AWS tools read them"
src s3 snap.tar
for variant in endpoint default-region profile; do
	case $variant in
	endpoint) senv=(AWS_ENDPOINT_URL="$S3_URL" AWS_REGION="$REGION"
		AWS_ACCESS_KEY_ID="$KEY" AWS_SECRET_ACCESS_KEY="$SECRET"
		AWS_SESSION_TOKEN="$TOKEN") ;;
	default-region) senv=(AWS_ENDPOINT_URL_S3="$S3_URL" AWS_DEFAULT_REGION="$REGION"
		AWS_ACCESS_KEY_ID="$KEY" AWS_SECRET_ACCESS_KEY="$SECRET"
		AWS_SESSION_TOKEN="$TOKEN") ;;
	profile)
		mkdir -p "$HOME/.aws"
		printf '[default]\naws_access_key_id = AKIDNOTTHIS\naws_secret_access_key = no\n\n[wsnaptest]\naws_access_key_id = %s\naws_secret_access_key = %s\naws_session_token = %s\n' \
			"$KEY" "$SECRET" "$TOKEN" >"$HOME/.aws/credentials"
		chmod 600 "$HOME/.aws/credentials"
		senv=(AWS_ENDPOINT_URL_S3="$S3_URL" AWS_REGION="$REGION" AWS_PROFILE=wsnaptest) ;;
	esac
	on "$W" check --no-cache "$url" 2>"$work/stderr" ||
		fail "s3 with $variant: $(cat "$work/stderr")"
done
rm -rf "$HOME/.aws"

# ---- credentials: not in arguments, mount sources, messages ----
step "credentials"
src s3 snap.tar
newmnt mnt-cred-s3
expect_rc 0 on "$W" mount "$url" "$mnt"
mnt_s3=$mnt
newmnt mnt-cred-http
expect_rc 0 timeout 120 "$W" mount "http://wsnapuser:wsnap-url-password@$hostport/snap.tar" "$mnt"
[ "$(findmnt -n -o SOURCE --mountpoint "$mnt")" = "$HTTP_URL/snap.tar" ] ||
	fail "mount source with credentials: '$(findmnt -n -o SOURCE --mountpoint "$mnt")'"
[ "$(findmnt -n -o SOURCE --mountpoint "$mnt_s3")" = "s3://snaps/snap.tar" ] ||
	fail "s3 mount source: '$(findmnt -n -o SOURCE --mountpoint "$mnt_s3")'"
for f in /proc/[0-9]*/cmdline; do
	tr '\0' ' ' 2>/dev/null <"$f" || true
done >"$work/cmdlines"
ps -eo args >>"$work/cmdlines"
no_secrets "$work/cmdlines" /proc/self/mountinfo
! grep -q wsnapuser /proc/self/mountinfo || fail "the URL's user in mountinfo"
on "$W" check -v --no-cache "$url" 2>"$work/stderr" >/dev/null || true
no_secrets "$work/stderr"
python3 "$helper" compare "$work/snap.tar" "$mnt" "$work/want.ls" ||
	fail "mount through a URL with credentials differs"
expect_rc 0 "$W" unmount "$mnt"
expect_rc 0 "$W" unmount "$mnt_s3"

# ---- faults: retries or EIO, never wrong bytes, never a hang ----
step "faults"
fault_start "$NGINX_HTTP_PORT"
newmnt mnt-faults
m=$(log_mark "$FAULT_LOG")
expect_rc 0 timeout 60 "$W" mount -o timeout=2 "$FAULT_URL/faults.tar" "$mnt"
[ "$(log_count "$FAULT_LOG" "$m")" -le 3 ] || fail "faults: mount: $(log_since "$FAULT_LOG" "$m")"
DATA='match=^GET /faults\.tar '
# fault WHAT FILE K=V...: FILE (fresh: no member next to it was read)
# reads right although the data requests meet the fault, which they must
fault() {
	local what=$1 f=$2
	shift 2
	fault_set "$DATA" "$@"
	timeout 60 python3 "$rr" check ok "$work/faults.tar" "$mnt" "$f" ||
		fail "faults: $what: not retried to the right bytes"
	fault_state | grep -q '"faulted": [1-9]' || fail "faults: $what: never met: $(fault_state)"
}
fault "two 500s" f01 mode=status status=500 n=2
fault "a 503" f04 mode=status status=503 n=1
fault "two resets" f07 mode=reset n=2
fault "a short body" f10 mode=truncate n=1
fault "a delay under the timeout" f13 mode=delay delay=0.5 n=2
# a fault that does not end: EIO in bounded time, then the mount recovers
# eio WHAT FILE K=V...
eio() {
	local what=$1 f=$2 t0 t
	shift 2
	fault_set "$DATA" "$@"
	t0=$SECONDS
	timeout 90 python3 "$rr" check eio "$work/faults.tar" "$mnt" "$f" ||
		fail "faults: $what: not EIO (or timed out after $((SECONDS - t0)) s)"
	t=$((SECONDS - t0))
	fault_set
	echo "faults: $what: EIO after $t s"
}
eio "500 for ever" f16 mode=status status=500
eio "a server that hangs (-o timeout=2)" f19 mode=hang
eio "resets for ever" f22 mode=reset
fault_set
timeout 60 python3 "$rr" check ok "$work/faults.tar" "$mnt" f25 ||
	fail "faults: the mount did not recover"
# the object replaced: EIO (If-Match), never the new object's bytes
etag() { curl -sfI "$1" | tr -d '\r' | awk -F': ' 'tolower($1) == "etag" { print $2 }'; }
[ "$(etag "$HTTP_URL/faults.tar")" != "$(etag "$HTTP_URL/faults-v2.tar")" ] ||
	fail "faults: the two objects have one ETag"
fault_set replace=/faults.tar=/faults-v2.tar
n=$(timeout 90 python3 "$rr" check either "$work/faults.tar" "$mnt" f28 f31) ||
	fail "faults: replaced object: wrong bytes or another error"
[ "$n" -ge 1 ] || fail "faults: the replaced object was read without EIO"
[ "$(log_count "$NGINX_LOG" 0 '$2 == "/faults-v2.tar" && $4 == 206')" = 0 ] ||
	fail "faults: the replaced object was served: requests not pinned to the ETag"
fault_set
# the server gone: EIO in bounded time, the mount still unmounts
remote_stop_one() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null || true; }
remote_stop_one "${remote_pids[-1]}"
unset 'remote_pids[-1]'
t0=$SECONDS
timeout 90 python3 "$rr" check eio "$work/faults.tar" "$mnt" f34 ||
	fail "faults: server gone: not EIO in bounded time"
echo "faults: server gone: EIO after $((SECONDS - t0)) s"
ls "$mnt" >/dev/null || fail "faults: the mount's listing failed with the server gone"
expect_rc 0 timeout 60 "$W" unmount "$mnt"
! is_mounted "$mnt" || fail "faults: still mounted"

# a 403 through the proxy at mount time
fault_start "$NGINX_HTTP_PORT"
fault_set mode=status status=403
newmnt mnt-403
expect_rc 4 timeout 60 "$W" mount "$FAULT_URL/faults.tar" "$mnt"
one_line "403" "$FAULT_URL/faults.tar"
! is_mounted "$mnt" || fail "mounted after a 403"
echo "e2e_remote: ok ($SECONDS s)"
