# SPDX-License-Identifier: MIT
# Sourced by the remote-snapshot tests (tests/e2e/e2e_remote*.sh) and
# bench/run.sh, after mount_lib.sh where they mount: the servers of
# tests/lib/remote_helper.py and the test's own nginx and s3rver, all on
# 127.0.0.1 ports picked free, each writing its port to a file, each ended
# by the EXIT trap (also on failure) and, should the test's shell be killed,
# by its own watchdog (remote_helper.py supervise / --parent).
#
#   remote_ca                  a CA and a certificate for 127.0.0.1 and
#                              localhost signed by it: $CA_PEM, $CERT_PEM,
#                              $KEY_PEM
#   nginx_start ROOT           nginx serving ROOT over HTTP ($HTTP_URL) and
#                              HTTPS ($HTTPS_URL, the certificate of
#                              remote_ca); access log $NGINX_LOG
#   s3_start BUCKET KEY SECRET [TOKEN] [PROXY-OPTION...]
#                              s3rver with BUCKET ($S3RVER_URL, no checks)
#                              behind the SigV4-checking proxy ($S3_URL,
#                              log $S3_LOG) that knows KEY, SECRET, TOKEN
#   s3_proxy KEY SECRET TOKEN [PROXY-OPTION...]
#                              another such proxy ($S3P_URL, $S3P_LOG);
#                              with --tls-cert $CERT_PEM --tls-key $KEY_PEM
#                              (remote_ca) over HTTPS
#   s3_put BUCKET KEY FILE     uploads FILE with s3rver's own API
#   fault_start UPSTREAM-PORT  the fault proxy ($FAULT_URL, log $FAULT_LOG)
#   fault_set K=V...           its behaviour (remote_helper.py FaultState)
#   fault_state                its state and counters (JSON)
#   remote_client_env          none of the caller's settings for wsnap
#                              (AWS_*, CA variables, proxies), a HOME and
#                              an index cache of the test's own
#   remote_probe WWW           after nginx_start WWW: exits 77 (skipped)
#                              when wsnap has no remote client (fails
#                              instead with WSNAP_REQUIRE_REMOTE=1)
#   log_mark LOG               the number of lines LOG has now
#   log_since LOG MARK         its lines after MARK, once it is quiet
#   log_count LOG MARK [AWK-CONDITION]   how many of them (that match)
#   log_bytes LOG MARK [AWK-CONDITION]   the body bytes they sent
# Log fields ($1..$6): method, URI, Range ('-' for none), status, body
# bytes sent, and nginx's scheme, the proxy's authentication result or the
# fault applied.

: "${WSNAP_SOURCE_DIR:?}"
remote_helper=$WSNAP_SOURCE_DIR/tests/lib/remote_helper.py
: "${name:=$(basename "$0" .sh)}"
S3RVER=${WSNAP_S3RVER:-${WSNAP_NPM_PREFIX:-/opt/wsnap-test-npm}/node_modules/.bin/s3rver}

if ! declare -F fail >/dev/null; then
	fail() { echo "FAIL: $name: $*" >&2; exit 1; }
fi

remote_pids=()
# remote_stop_all: every server started here, TERM then (after 5 s) KILL
remote_stop_all() {
	local p i alive
	[ ${#remote_pids[@]} -gt 0 ] || return 0
	for p in "${remote_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for i in $(seq 50); do
		alive=0
		for p in "${remote_pids[@]}"; do
			kill -0 "$p" 2>/dev/null && alive=1
		done
		[ $alive = 0 ] && break
		sleep 0.1
	done
	for p in "${remote_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	remote_pids=()
}

if [ -z "${work:-}" ]; then
	work=$(mktemp -d "${TMPDIR:-/tmp}/wsnap-remote.XXXXXX")
	trap 'remote_stop_all; rm -rf --one-file-system "$work"' EXIT
elif declare -F cleanup >/dev/null; then
	trap 'remote_stop_all; cleanup' EXIT # mount_lib.sh's unmounts follow
fi
rdir=$work/remote
mkdir -p "$rdir"

for t in nginx openssl curl; do
	command -v "$t" >/dev/null || PATH=$PATH:/usr/sbin:/sbin
	command -v "$t" >/dev/null || fail "$t missing (scripts/deps.sh installs it)"
done

# wait_port_file FILE: its port once the server has written it (30 s)
wait_port_file() {
	local i
	for i in $(seq 300); do
		[ -s "$1" ] && { cat "$1"; return 0; }
		sleep 0.1
	done
	return 1
}

# wait_http URL: until something answers URL (about 30 s); curl's exit
# otherwise
wait_http() {
	local i rc=0
	for i in $(seq 300); do
		rc=0
		curl -s -o /dev/null --max-time 2 "$@" || rc=$?
		[ $rc = 0 ] && return 0
		sleep 0.1
	done
	return $rc
}

remote_ca() {
	local d=$rdir/ca
	mkdir -p "$d"
	CA_PEM=$d/ca.pem CERT_PEM=$d/server.pem KEY_PEM=$d/server.key
	[ -s "$CERT_PEM" ] && return 0
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -keyout "$d/ca.key" -out "$CA_PEM" -days 2 \
		-subj "/CN=wsnap test CA $$" \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>"$d/err" &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout "$KEY_PEM" -out "$d/server.csr" -subj /CN=127.0.0.1 \
			2>>"$d/err" &&
		printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost' \
			'basicConstraints=CA:FALSE' 'extendedKeyUsage=serverAuth' \
			>"$d/ext" &&
		openssl x509 -req -in "$d/server.csr" -CA "$CA_PEM" \
			-CAkey "$d/ca.key" -CAcreateserial -days 2 -extfile "$d/ext" \
			-out "$CERT_PEM" 2>>"$d/err" ||
		fail "making the test CA: $(cat "$d/err")"
}

# nginx_conf DIR ROOT HTTP-PORT HTTPS-PORT
nginx_conf() {
	local d=$1 user=
	[ "$(id -u)" = 0 ] && user="user root root;"
	cat >"$d/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
$user
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 512; }
http {
	types { }
	default_type application/octet-stream;
	log_format wsnap '\$request_method\t\$request_uri\t\$http_range\t\$status\t\$body_bytes_sent\t\$scheme';
	access_log $d/access.log wsnap;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	sendfile on;
	tcp_nopush on;
	keepalive_requests 100000;
	keepalive_timeout 60s;
	server {
		listen 127.0.0.1:$3;
		listen 127.0.0.1:$4 ssl;
		server_name localhost;
		ssl_certificate $CERT_PEM;
		ssl_certificate_key $KEY_PEM;
		root $2;
		location = /_wsnap_ready { access_log off; return 204; }
		location / { }
	}
}
EOF
}

nginx_start() {
	local root=$1 d=$rdir/nginx try hp sp pid
	remote_ca
	mkdir -p "$d/tmp"
	for try in 1 2 3 4 5; do
		hp=$(python3 "$remote_helper" freeport)
		sp=$(python3 "$remote_helper" freeport)
		[ "$hp" != "$sp" ] || continue
		nginx_conf "$d" "$root" "$hp" "$sp"
		: >"$d/access.log"
		python3 "$remote_helper" supervise --parent $$ -- \
			nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf" \
			</dev/null >>"$d/stdout" 2>&1 &
		pid=$!
		remote_pids+=("$pid")
		if wait_http "http://127.0.0.1:$hp/_wsnap_ready" &&
			wait_http --cacert "$CA_PEM" "https://127.0.0.1:$sp/_wsnap_ready"; then
			NGINX_HTTP_PORT=$hp NGINX_HTTPS_PORT=$sp NGINX_LOG=$d/access.log
			HTTP_URL=http://127.0.0.1:$hp HTTPS_URL=https://127.0.0.1:$sp
			echo "$hp" >"$d/http.port"
			echo "$sp" >"$d/https.port"
			return 0
		fi
		kill -TERM "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		unset 'remote_pids[-1]'
	done
	fail "nginx did not start: $(tail -5 "$d/error.log" "$d/stdout" 2>/dev/null)"
}

s3_start() {
	local bucket=$1 key=$2 secret=$3 token=${4:-} d=$rdir/s3 try port
	shift 3
	[ $# -eq 0 ] || shift
	[ -x "$S3RVER" ] || fail "s3rver missing at $S3RVER (scripts/deps.sh installs it)"
	command -v node >/dev/null || fail "node missing (scripts/deps.sh)"
	mkdir -p "$d/data"
	for try in 1 2 3 4 5; do
		port=$(python3 "$remote_helper" freeport)
		python3 "$remote_helper" supervise --parent $$ -- \
			"$S3RVER" -d "$d/data" -a 127.0.0.1 -p "$port" -s \
			--configure-bucket "$bucket" </dev/null >>"$d/s3rver.out" 2>&1 &
		remote_pids+=("$!")
		wait_http "http://127.0.0.1:$port/" && break
		kill -TERM "${remote_pids[-1]}" 2>/dev/null
		wait "${remote_pids[-1]}" 2>/dev/null
		unset 'remote_pids[-1]'
		port=
	done
	[ -n "$port" ] || fail "s3rver did not start: $(tail -5 "$d/s3rver.out")"
	S3RVER_PORT=$port S3RVER_URL=http://127.0.0.1:$port
	s3_proxy "$key" "$secret" "$token" "$@"
	S3_URL=$S3P_URL S3_LOG=$S3P_LOG
}

# s3_proxy KEY SECRET TOKEN [PROXY-OPTION...]: one more SigV4 proxy in front
# of the s3rver of s3_start: $S3P_URL (https:// with --tls-cert), log $S3P_LOG
s3_proxy_n=0
s3_proxy() {
	local d=$rdir/s3/proxy$((++s3_proxy_n)) scheme=http a
	mkdir -p "$d"
	printf '%s\n%s\n%s\n' "$1" "$2" "$3" >"$d/credentials"
	chmod 600 "$d/credentials"
	shift 3
	for a; do [ "$a" = --tls-cert ] && scheme=https; done
	S3P_LOG=$d/access.log
	: >"$S3P_LOG"
	python3 "$remote_helper" sigv4-proxy --parent $$ --upstream "$S3RVER_PORT" \
		--credentials "$d/credentials" --log "$S3P_LOG" \
		--port-file "$d/port" "$@" </dev/null >>"$d/out" 2>&1 &
	remote_pids+=("$!")
	S3P_URL=$scheme://127.0.0.1:$(wait_port_file "$d/port") ||
		fail "the SigV4 proxy did not start: $(cat "$d/out")"
}

s3_put() {
	local k
	k=$(python3 -c 'import sys, urllib.parse as u; print(u.quote(sys.argv[1], safe="/"))' "$2")
	curl -fsS -o /dev/null -T "$3" "$S3RVER_URL/$1/$k" ||
		fail "uploading $3 to s3rver as $1/$2"
}

fault_start() {
	local d=$rdir/fault
	mkdir -p "$d"
	rm -f "$d/port" "$d/control.port"
	FAULT_LOG=$d/access.log
	: >"$FAULT_LOG"
	python3 "$remote_helper" fault-proxy --parent $$ --upstream "$1" \
		--log "$FAULT_LOG" --port-file "$d/port" \
		--control-port-file "$d/control.port" </dev/null >>"$d/out" 2>&1 &
	remote_pids+=("$!")
	FAULT_PORT=$(wait_port_file "$d/port") ||
		fail "the fault proxy did not start: $(cat "$d/out")"
	FAULT_CTL=$(cat "$d/control.port")
	FAULT_URL=http://127.0.0.1:$FAULT_PORT
}

fault_set() {
	local a args=()
	for a; do args+=(--data-urlencode "$a"); done
	curl -fsS -G --max-time 5 "http://127.0.0.1:$FAULT_CTL/set" "${args[@]}" \
		>/dev/null || fail "fault_set $*"
}

fault_state() { curl -fsS --max-time 5 "http://127.0.0.1:$FAULT_CTL/state"; }

log_mark() { wc -l <"$1"; }

# The servers write a line once a response is sent, so the client may have
# it a moment before its line is there: wait until LOG has been still for
# 0.2 s (at most 5 s).
log_settle() {
	local i still=0 n m
	n=$(wc -c <"$1")
	for i in $(seq 50); do
		sleep 0.1
		m=$(wc -c <"$1")
		if [ "$m" = "$n" ]; then
			still=$((still + 1))
			[ $still -ge 2 ] && return 0
		else
			still=0 n=$m
		fi
	done
}

log_since() {
	log_settle "$1"
	tail -n +"$(($2 + 1))" "$1"
}

log_count() {
	log_since "$1" "$2" | awk -F'\t' "${3:-1} { n++ } END { print n + 0 }"
}

log_bytes() {
	log_since "$1" "$2" | awk -F'\t' "${3:-1} { n += \$5 } END { print n + 0 }"
}

remote_probe() {
	local m rc=0
	mkdir -p "$1/probe"
	echo probe >"$1/probe/file"
	tar -C "$1/probe" -cf "$1/probe.tar" file
	m=$(log_mark "$NGINX_LOG")
	timeout 60 "$WSNAP_BIN" check --no-cache "$HTTP_URL/probe.tar" >/dev/null \
		2>"$rdir/probe.err" || rc=$?
	if [ $rc != 0 ] && [ "$(log_count "$NGINX_LOG" "$m")" = 0 ]; then
		[ "${WSNAP_REQUIRE_REMOTE:-0}" = 1 ] &&
			fail "remote sources not built and WSNAP_REQUIRE_REMOTE=1: $(cat "$rdir/probe.err")"
		echo "skip: remote sources not built ($(head -1 "$rdir/probe.err"))"
		exit 77
	fi
	[ $rc = 0 ] || fail "check $HTTP_URL/probe.tar: exit $rc: $(cat "$rdir/probe.err")"
}

remote_client_env() {
	export WSNAP_CACHE_DIR=$work/cache
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN \
		AWS_PROFILE AWS_REGION AWS_DEFAULT_REGION AWS_ENDPOINT_URL \
		AWS_ENDPOINT_URL_S3 AWS_CA_BUNDLE CURL_CA_BUNDLE SSL_CERT_FILE \
		AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE http_proxy \
		https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
	export HOME=$work/home NO_PROXY='*'
	mkdir -p "$HOME"
}
