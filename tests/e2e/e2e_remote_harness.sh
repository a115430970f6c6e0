#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: the servers of the remote-snapshot tests (tests/lib/
# remote_lib.sh), checked with curl alone, so that e2e_remote.sh can trust
# them: nginx over HTTP and over HTTPS with the test's CA (and refused
# without it), ranges and conditional requests, request counts and bytes
# from its access log; the SigV4 proxy in front of s3rver against curl's own
# signing (a right signature passes, a wrong secret, key, token, region or a
# missing x-amz-content-sha256 are refused as S3 refuses them), its ranges
# and preconditions; every mode of the fault proxy; every server on
# 127.0.0.1 only and gone after the trap, or once the test's shell is.
set -euo pipefail
: "${WSNAP_SOURCE_DIR:?}"
. "$WSNAP_SOURCE_DIR/tests/lib/remote_lib.sh"

www=$work/www
mkdir -p "$www/dir"
python3 - "$www" <<'PY'
import random, sys
w = sys.argv[1]
r = random.Random(14)
open(w + "/obj.bin", "wb").write(r.randbytes(3 << 20))
open(w + "/v2.bin", "wb").write(r.randbytes(1 << 20))
open(w + "/dir/a b.txt", "wb").write(b"spaced name\n")
PY
OBJ=$www/obj.bin
SIZE=$(stat -c %s "$OBJ")
# slice FIRST LAST: bytes FIRST..LAST of obj.bin
slice() { head -c $(($2 + 1)) "$OBJ" | tail -c $(($2 - $1 + 1)); }
# code ARGS...: curl's HTTP status (000 and curl's exit where it failed),
# the body in $work/body, the headers in $work/hdr
code() {
	local rc=0 c
	c=$(curl -s --max-time 10 -o "$work/body" -D "$work/hdr" \
		-w '%{http_code}' "$@") || rc=$?
	[ $rc = 0 ] && echo "$c" || echo "$c rc=$rc"
}
want() { # WHAT GOT EXPECTED
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}
header() { # NAME: its value in $work/hdr
	tr -d '\r' <"$work/hdr" | awk -v n="$1" -F': ' \
		'tolower($1) == tolower(n) { print $2 }' | tail -1
}

# ---- nginx: HTTP, HTTPS with and without the CA, ranges, counts ----
nginx_start "$www"
for url in "$HTTP_URL" "$HTTPS_URL"; do
	set -- --cacert "$CA_PEM"
	[ "$url" = "$HTTPS_URL" ] || set --
	want "$url whole" "$(code "$@" "$url/obj.bin")" 200
	cmp -s "$work/body" "$OBJ" || fail "$url: whole object differs"
	for r in 0-0 0-99 4095-70000 $((SIZE - 10))-$((SIZE + 5)) 1048576-; do
		first=${r%-*} last=${r#*-}
		[ -n "$last" ] && [ "$last" -lt "$SIZE" ] || last=$((SIZE - 1))
		want "$url range $r" "$(code "$@" -r "$r" "$url/obj.bin")" 206
		slice "$first" "$last" | cmp -s - "$work/body" ||
			fail "$url: range $r: wrong bytes"
		want "$url Content-Range of $r" "$(header Content-Range)" \
			"bytes $first-$last/$SIZE"
	done
	want "$url suffix" "$(code "$@" -r -100 "$url/obj.bin")" 206
	tail -c 100 "$OBJ" | cmp -s - "$work/body" || fail "$url: suffix range"
	want "$url beyond the end" "$(code "$@" -r "$SIZE-" "$url/obj.bin")" 416
	want "$url HEAD" "$(code "$@" -I "$url/obj.bin")" 200
	etag=$(header ETag)
	[ -n "$etag" ] && [ -n "$(header Last-Modified)" ] ||
		fail "$url: no ETag or Last-Modified"
	want "$url If-Match" "$(code "$@" -r 0-9 -H "If-Match: $etag" "$url/obj.bin")" 206
	want "$url If-Match stale" \
		"$(code "$@" -r 0-9 -H 'If-Match: "0-0"' "$url/obj.bin")" 412
	want "$url missing" "$(code "$@" "$url/nothing.tar")" 404
	want "$url spaced name" "$(code "$@" "$url/dir/a%20b.txt")" 200
done
# without the CA: curl refuses the certificate (exit 60), and so does a CA
# the server's certificate is not from
want "https without the CA" "$(code "$HTTPS_URL/obj.bin")" "000 rc=60"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$work/other.key" -out "$work/other.pem" -days 1 \
	-subj /CN=other 2>/dev/null
want "https with another CA" \
	"$(code --cacert "$work/other.pem" "$HTTPS_URL/obj.bin")" "000 rc=60"
want "https by name" \
	"$(code --cacert "$CA_PEM" "https://localhost:$NGINX_HTTPS_PORT/dir/a%20b.txt")" 200

# counts and bytes from the log: 5 ranges on one connection, 1 HEAD
m=$(log_mark "$NGINX_LOG")
args=()
for r in 0-999 1000-1999 0-0 5-9 10-10009; do
	args+=(-s -o /dev/null -r "$r" "$HTTP_URL/obj.bin" --next)
done
curl "${args[@]}" -s -o /dev/null "$HTTP_URL/nothing"
curl -s -I -o /dev/null "$HTTP_URL/obj.bin"
want "requests logged" "$(log_count "$NGINX_LOG" "$m")" 7
want "404 logged" "$(log_count "$NGINX_LOG" "$m" '$2 == "/nothing" && $4 == 404')" 1
want "range GETs logged" "$(log_count "$NGINX_LOG" "$m" '$1 == "GET" && $3 ~ /^bytes=/ && $4 == 206')" 5
want "HEADs logged" "$(log_count "$NGINX_LOG" "$m" '$1 == "HEAD"')" 1
want "bytes logged" "$(log_bytes "$NGINX_LOG" "$m" '$4 == 206')" $((1000 + 1000 + 1 + 5 + 10000))
m=$(log_mark "$NGINX_LOG")
curl -s --cacert "$CA_PEM" -o /dev/null "$HTTPS_URL/obj.bin"
want "https logged" "$(log_count "$NGINX_LOG" "$m" '$6 == "https" && $5 == '"$SIZE")" 1

# ---- the SigV4 proxy in front of s3rver ----
KEY=AKIDWSNAPTEST SECRET=wsnap-test-secret/with+chars
s3_start snaps "$KEY" "$SECRET"
s3_put snaps snap.tar "$OBJ"
s3_put snaps "dir/a b.txt" "$www/dir/a b.txt"
UNSIGNED=(-H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
sig() { echo --aws-sigv4 "aws:amz:${REGION:-us-east-1}:s3"; }
s3c() { # [CURL-ARGS...] URL, signed with KEY:SECRET
	# shellcheck disable=SC2046
	code $(sig) --user "$KEY:$SECRET" "$@"
}
s3err() { grep -o '<Code>[^<]*</Code>' "$work/body" | sed 's/<[^>]*>//g'; }
m=$(log_mark "$S3_LOG")
want "s3 signed GET" "$(s3c "${UNSIGNED[@]}" "$S3_URL/snaps/snap.tar")" 200
cmp -s "$work/body" "$OBJ" || fail "s3: whole object differs"
s3etag=$(header ETag)
[ -n "$s3etag" ] && [ -n "$(header Last-Modified)" ] ||
	fail "s3: no ETag or Last-Modified"
empty=$(printf '' | sha256sum | cut -d' ' -f1)
want "s3 signed with the payload's hash" \
	"$(s3c -H "x-amz-content-sha256: $empty" "$S3_URL/snaps/snap.tar")" 200
want "s3 signed HEAD" "$(s3c -I "${UNSIGNED[@]}" "$S3_URL/snaps/snap.tar")" 200
want "s3 HEAD length" "$(header Content-Length)" "$SIZE"
want "s3 HEAD ETag" "$(header ETag)" "$s3etag"
want "s3 key with a space" \
	"$(s3c "${UNSIGNED[@]}" "$S3_URL/snaps/dir/a%20b.txt")" 200
cmp -s "$work/body" "$www/dir/a b.txt" || fail "s3: spaced key differs"
want "s3 with a query" \
	"$(s3c "${UNSIGNED[@]}" "$S3_URL/snaps/snap.tar?a=b%2Fc&x-id=GetObject")" 200
for r in 0-0 0-99 4095-70000 $((SIZE - 10))-$((SIZE + 5)) 1048576-; do
	first=${r%-*} last=${r#*-}
	[ -n "$last" ] && [ "$last" -lt "$SIZE" ] || last=$((SIZE - 1))
	want "s3 range $r" "$(s3c "${UNSIGNED[@]}" -r "$r" "$S3_URL/snaps/snap.tar")" 206
	slice "$first" "$last" | cmp -s - "$work/body" || fail "s3: range $r: wrong bytes"
	want "s3 Content-Range of $r" "$(header Content-Range)" "bytes $first-$last/$SIZE"
	want "s3 Content-Length of $r" "$(header Content-Length)" $((last - first + 1))
done
want "s3 suffix" "$(s3c "${UNSIGNED[@]}" -r -100 "$S3_URL/snaps/snap.tar")" 206
tail -c 100 "$OBJ" | cmp -s - "$work/body" || fail "s3: suffix range"
want "s3 If-Match" "$(s3c "${UNSIGNED[@]}" -r 0-9 -H "If-Match: $s3etag" \
	"$S3_URL/snaps/snap.tar")" 206
want "s3 If-Match stale" "$(s3c "${UNSIGNED[@]}" -r 0-9 -H 'If-Match: "0"' \
	"$S3_URL/snaps/snap.tar")" 412
want "s3 412 code" "$(s3err)" PreconditionFailed
want "s3 If-None-Match" "$(s3c "${UNSIGNED[@]}" -H "If-None-Match: $s3etag" \
	"$S3_URL/snaps/snap.tar")" 304
want "s3 missing key" "$(s3c "${UNSIGNED[@]}" "$S3_URL/snaps/nothing.tar")" 404
want "s3 404 code" "$(s3err)" NoSuchKey
n_ok=$(log_count "$S3_LOG" "$m" '$6 == "ok"')
# 14 forwarded (the 304 and the 404 among them), the 412 answered here
want "s3 requests logged" "$n_ok" 14
want "s3 412 logged" "$(log_count "$S3_LOG" "$m" '$6 == "PreconditionFailed"')" 1

# refusals, as S3 answers them
m=$(log_mark "$S3_LOG")
# shellcheck disable=SC2046
want "s3 wrong secret" "$(code $(sig) --user "$KEY:wrong" "${UNSIGNED[@]}" \
	"$S3_URL/snaps/snap.tar")" 403
want "s3 wrong secret code" "$(s3err)" SignatureDoesNotMatch
grep -q 'Content-Type: application/xml' "$work/hdr" || fail "s3 error not XML"
# shellcheck disable=SC2046
want "s3 wrong key" "$(code $(sig) --user "AKIDOTHER:$SECRET" "${UNSIGNED[@]}" \
	"$S3_URL/snaps/snap.tar")" 403
want "s3 wrong key code" "$(s3err)" InvalidAccessKeyId
want "s3 anonymous" "$(code "$S3_URL/snaps/snap.tar")" 403
want "s3 anonymous code" "$(s3err)" AccessDenied
want "s3 wrong region" "$(REGION=eu-west-1 s3c "${UNSIGNED[@]}" \
	"$S3_URL/snaps/snap.tar")" 400
want "s3 wrong region code" "$(s3err)" AuthorizationHeaderMalformed
want "s3 without x-amz-content-sha256" "$(s3c "$S3_URL/snaps/snap.tar")" 400
want "s3 without x-amz-content-sha256 code" "$(s3err)" InvalidRequest
want "s3 payload hash wrong" "$(s3c -H "x-amz-content-sha256: ${empty/e/f}" \
	"$S3_URL/snaps/snap.tar")" 400
want "s3 payload hash wrong code" "$(s3err)" XAmzContentSHA256Mismatch
# a request altered after it was signed: another range, an added x-amz-
# header, another key, an old date
python3 - "$S3_URL" "$KEY" "$SECRET" "$work" <<'PY' || fail "s3: a request altered after signing was not refused"
# sign with curl's algorithm, as curl did, then send an altered copy
import hashlib, hmac, http.client, sys, time
url, key, secret, work = sys.argv[1:]
port = int(url.rsplit(":", 1)[1])
def sign(method, path, headers):
    amz = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    headers = dict(headers, **{"x-amz-date": amz,
                   "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    names = sorted(k.lower() for k in headers)
    canon = "".join("%s:%s\n" % (n, headers[n]) for n in names)
    creq = "\n".join([method, path, "", canon, ";".join(names),
                      "UNSIGNED-PAYLOAD"])
    scope = amz[:8] + "/us-east-1/s3/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", amz, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (amz[:8], "us-east-1", "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    s = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = ("AWS4-HMAC-SHA256 Credential=%s/%s, "
                                "SignedHeaders=%s, Signature=%s" %
                                (key, scope, ";".join(names), s))
    return headers
def get(headers, path="/snaps/snap.tar"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path, headers=headers)
    r = c.getresponse()
    return r.status, r.read()
h = sign("GET", "/snaps/snap.tar", {"host": "127.0.0.1:%d" % port,
                                    "range": "bytes=0-9"})
st, _ = get(h)
assert st == 206, "our own signature: %d" % st
st, body = get(dict(h, range="bytes=0-99"))
assert st == 403 and b"SignatureDoesNotMatch" in body, st
st, body = get(dict(h, **{"x-amz-meta-late": "1"}))
assert st == 403 and b"AccessDenied" in body, st
st, body = get(h, "/snaps/other.tar")
assert st == 403 and b"SignatureDoesNotMatch" in body, st
old = dict(h)
old["x-amz-date"] = "20200101T000000Z"
st, body = get(old)
assert st in (400, 403) and b"<Error>" in body, st
PY
want "s3 refusals logged" "$(log_count "$S3_LOG" "$m" '$4 >= 400')" 10
want "s3 refusals forwarded" "$(log_count "$S3_LOG" "$m" '$6 == "ok" && $4 != 206')" 0

# another proxy: a session token; and one that takes curl 7.88's requests
# as it sends them (no x-amz-content-sha256) and anonymous ones
s3_proxy "$KEY" "$SECRET" wsnap-session-token
want "s3 token" "$(s3c "${UNSIGNED[@]}" -H "X-Amz-Security-Token: wsnap-session-token" \
	-r 0-9 "$S3P_URL/snaps/snap.tar")" 206
want "s3 wrong token" "$(s3c "${UNSIGNED[@]}" -H "X-Amz-Security-Token: other" \
	"$S3P_URL/snaps/snap.tar")" 403
want "s3 wrong token code" "$(s3err)" InvalidToken
want "s3 no token" "$(s3c "${UNSIGNED[@]}" "$S3P_URL/snaps/snap.tar")" 403
s3_proxy "$KEY" "$SECRET" "" --allow-missing-content-sha256 --allow-anonymous
want "s3 plain curl --aws-sigv4" "$(s3c -r 0-99 "$S3P_URL/snaps/snap.tar")" 206
slice 0 99 | cmp -s - "$work/body" || fail "s3 plain curl: wrong bytes"
# shellcheck disable=SC2046
want "s3 plain curl, wrong secret" "$(code $(sig) --user "$KEY:x" \
	"$S3P_URL/snaps/snap.tar")" 403
want "s3 anonymous allowed" "$(code -r 0-9 "$S3P_URL/snaps/snap.tar")" 206
grep -q 'anonymous' "$S3P_LOG" || fail "anonymous request not logged as such"

# ---- the fault proxy in front of nginx ----
fault_start "$NGINX_HTTP_PORT"
F=$FAULT_URL/obj.bin
want "fault pass" "$(code "$F")" 200
cmp -s "$work/body" "$OBJ" || fail "fault pass: wrong bytes"
want "fault pass range" "$(code -r 100-199 "$F")" 206
slice 100 199 | cmp -s - "$work/body" || fail "fault pass range: wrong bytes"
fault_set mode=status status=503 n=2
want "503 1" "$(code "$F")" 503
want "503 2" "$(code "$F")" 503
want "503 over" "$(code -r 0-9 "$F")" 206
fault_set mode=status status=500 skip=1 n=1 'match=^GET .* bytes='
want "skip: HEAD not matched" "$(code -I "$F")" 200
want "skip: first range" "$(code -r 0-9 "$F")" 206
want "skip: second range" "$(code -r 0-9 "$F")" 500
want "skip: third range" "$(code -r 0-9 "$F")" 206
st=$(fault_state)
python3 -c 'import json, sys; s = json.loads(sys.argv[1]); assert (s["seen"], s["faulted"]) == (3, 1), s' "$st" ||
	fail "fault counters: $st"
fault_set mode=reset n=1
want "reset" "$(code "$F")" "000 rc=56"
want "after reset" "$(code -r 0-9 "$F")" 206
fault_set mode=truncate bytes=1000
want "truncate" "$(code "$F")" "200 rc=18"
want "truncated body" "$(stat -c %s "$work/body")" 1000
want "truncated length header" "$(header Content-Length)" "$SIZE"
fault_set mode=truncate
want "truncate range" "$(code -r 0-99 "$F")" "206 rc=18"
want "truncated range body" "$(stat -c %s "$work/body")" 50
fault_set mode=delay delay=1.5
t0=$(date +%s%N)
want "delay" "$(code -r 0-9 "$F")" 206
t=$((($(date +%s%N) - t0) / 1000000))
[ "$t" -ge 1400 ] || fail "delay: answered in $t ms"
fault_set mode=hang
t0=$(date +%s%N)
want "hang" "$(code --max-time 1 -r 0-9 "$F")" "000 rc=28"
code --max-time 20 -r 0-9 "$F" >"$work/hung" &
hung=$!
for i in $(seq 100); do # until the proxy holds it
	fault_state | grep -q '"faulted": 2' && break
	sleep 0.1
done
fault_set mode=pass # releases the hung request: its connection is reset
wait $hung
want "hang released" "$(cat "$work/hung")" "000 rc=56"
want "after hang" "$(code -r 0-9 "$F")" 206
e1=$(curl -sI "$F" | tr -d '\r' | awk -F': ' 'tolower($1) == "etag" { print $2 }')
fault_set replace=/obj.bin=/v2.bin
want "replaced" "$(code "$F")" 200
cmp -s "$work/body" "$www/v2.bin" || fail "replace: not the other object"
[ "$(header ETag)" != "$e1" ] || fail "replace: same ETag"
want "replaced, pinned to the old ETag" "$(code -r 0-9 -H "If-Match: $e1" "$F")" 412
grep -q "+replaced" "$FAULT_LOG" || fail "replace not logged"
fault_set
want "replace undone" "$(code -r 0-9 -H "If-Match: $e1" "$F")" 206
want "fault log lines" "$(log_count "$FAULT_LOG" 0)" 21
want "fault log: faults" "$(log_count "$FAULT_LOG" 0 '$6 !~ /^pass/')" 9
want "fault log: replaced" "$(log_count "$FAULT_LOG" 0 '$6 == "pass+replaced"')" 2

# ---- loopback only; the servers end with the trap and with the shell ----
ports="$NGINX_HTTP_PORT $NGINX_HTTPS_PORT $S3RVER_PORT ${S3_URL##*:} ${S3P_URL##*:} $FAULT_PORT $FAULT_CTL"
for p in $ports; do
	l=$(ss -Hltn "sport = :$p" | awk '{ print $4 }')
	[ -n "$l" ] || fail "nothing listens on port $p"
	[ "$l" = "127.0.0.1:$p" ] || fail "port $p listens on $l, not 127.0.0.1"
done
nginx_pids=$(pgrep -s 0 -f "nginx.*$rdir/nginx" | tr '\n' ' ' || true)
[ -n "$nginx_pids" ] || fail "no nginx processes found"
all="${remote_pids[*]} $nginx_pids"
remote_stop_all
# alive PID: running (a zombie has exited; its reaper may be slow)
alive() { awk '{ sub(/.*\) /, ""); exit $1 == "Z" }' "/proc/$1/stat" 2>/dev/null; }
for p in $all; do
	alive "$p" && fail "process $p still there after the stop: $(ps -o pid,ppid,stat,args -p "$p")"
done
for p in $ports; do
	[ -z "$(ss -Hltn "sport = :$p")" ] || fail "port $p still listened on"
done
# the watchdog: a proxy whose parent (here a sleep) is gone exits
sleep 30 &
sp=$!
python3 "$remote_helper" fault-proxy --parent $sp --upstream 1 \
	--log "$work/wd.log" --port-file "$work/wd.port" \
	--control-port-file "$work/wd.ctl" &
wd=$!
wait_port_file "$work/wd.port" >/dev/null || fail "watchdog proxy did not start"
kill $sp
for i in $(seq 50); do kill -0 $wd 2>/dev/null || break; sleep 0.1; done
kill -0 $wd 2>/dev/null && { kill $wd; fail "proxy outlived its parent"; }
wait $wd 2>/dev/null || true
echo "e2e_remote_harness: ok"
