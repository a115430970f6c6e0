#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Remote snapshots over loopback (issue 14, cli.md "Remote snapshots"):
# wsnap reading from the nginx of tests/lib/remote_lib.sh, against curl and
# a mount of the same archive as a local file. Prints a Markdown table.
#
#   bench/remote.sh [--quick] [--workdir DIR] [--wsnap PATH]
#
# Rows (requests and bytes from nginx's access log):
#  - mount of the 100,000-file snapshot with its sidecar (URL.wsnapidx);
#  - time to first byte: mount, then the first byte of one file;
#  - cat of 1,000 scattered small files (every 100th, in name order);
#  - a sequential read of the 1 GiB member through the mount, against
#    'curl -o /dev/null' of the object and a first read through a mount of
#    the local file (in the page cache);
#  - hydrate from the URL until the workspace is usable, against
#    'curl URL | tar -x'.
# Every mount is taken down on exit, nginx stopped, the work dir removed.
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=$(dirname "$BENCH_DIR")
QUICK=0
WORKDIR=
WSNAP=${WSNAP_BIN:-$SRC_DIR/build/tools/wsnap}
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--workdir) WORKDIR=${2:?}; shift ;;
	--wsnap) WSNAP=${2:?}; shift ;;
	-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
	*) echo "remote.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
	shift
done
if [ $QUICK = 1 ]; then
	DIRS=10 FILES=100 MIB=64 SCATTER=100 STEP=10
else
	DIRS=100 FILES=1000 MIB=1024 SCATTER=1000 STEP=100
fi

work=$(mktemp -d "${WORKDIR:-${TMPDIR:-/tmp}}/wsnap-remote-bench.XXXXXX")
mounts=()
cleanup() {
	local m
	for m in "${mounts[@]}"; do
		mountpoint -q "$m" 2>/dev/null && "$WSNAP" unmount --discard "$m" >/dev/null 2>&1
		mountpoint -q "$m" 2>/dev/null && fusermount3 -uz "$m" 2>/dev/null
	done
	rm -rf --one-file-system "$work"
}
export WSNAP_SOURCE_DIR=$SRC_DIR
name=bench-remote
. "$SRC_DIR/tests/lib/remote_lib.sh"
export WSNAP_CACHE_DIR=$work/cache

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
mib_s() { awk -v b="$1" -v t="$2" 'BEGIN { printf "%.0f", b / 1048576 / t }'; }
row() { printf '| %s | %s | %s | %s |\n' "$@"; }
# counted SINCE-MARK: "requests, bytes" of nginx's log since the mark
counted() {
	printf '%s requests, %s bytes' "$(log_count "$NGINX_LOG" "$1")" \
		"$(log_bytes "$NGINX_LOG" "$1")"
}
newmnt() {
	mnt=$work/mnt$((${#mounts[@]} + 1))
	mkdir -p "$mnt"
	mounts+=("$mnt")
}

www=$work/www
mkdir -p "$www"
python3 "$BENCH_DIR/gen.py" small "$work/small" --dirs $DIRS --files $FILES \
	--max-size 1024 || exit 1
mkdir -p "$work/big"
python3 "$BENCH_DIR/gen.py" big "$work/big/big.bin" --mib $MIB || exit 1
tar -C "$work/small" --sort=name --owner=0 --group=0 --numeric-owner \
	-cf "$www/small.tar" . || exit 1
tar -C "$work/big" --owner=0 --group=0 --numeric-owner \
	-cf "$www/big.tar" big.bin || exit 1
rm -rf "$work/small" "$work/big"
"$WSNAP" index "$www/small.tar" -o "$www/small.tar.wsnapidx" || exit 1
"$WSNAP" index "$www/big.tar" -o "$www/big.tar.wsnapidx" || exit 1
nginx_start "$www"
U=$HTTP_URL

echo "| measure | wsnap | against | figures |"
echo "| --- | --- | --- | --- |"

# ---- mount with a sidecar; time to first byte ----
newmnt
m=$(log_mark "$NGINX_LOG")
t0=$(now)
"$WSNAP" mount "$U/small.tar" "$mnt" || exit 1
t1=$(now)
first=$(cd "$mnt" && find . -type f | head -1)
head -c 1 "$mnt/$first" >/dev/null
t2=$(now)
row "mount, $((DIRS * FILES)) files, sidecar" "$(secs "$t0" "$t1") s" "-" \
	"$(counted "$m")"
row "time to first byte (mount + 1 byte)" "$(secs "$t0" "$t2") s" "-" "-"

# ---- scattered small files ----
python3 - "$www/small.tar" $STEP $SCATTER >"$work/scatter" <<'PY'
import sys, tarfile
step, n = int(sys.argv[2]), int(sys.argv[3])
with tarfile.open(sys.argv[1]) as tf:
    files = sorted((m for m in tf.getmembers() if m.isfile()),
                   key=lambda m: m.name)
picked = files[::step][:n]
print(sum(m.size for m in picked))
for m in picked:
    print(m.name[2:] if m.name.startswith("./") else m.name)
PY
need=$(head -1 "$work/scatter")
m=$(log_mark "$NGINX_LOG")
t0=$(now)
tail -n +2 "$work/scatter" | (cd "$mnt" && xargs -d '\n' cat) >/dev/null
t1=$(now)
row "cat of $SCATTER scattered files ($need bytes)" "$(secs "$t0" "$t1") s" \
	"limit: $SCATTER requests, $need + 64 KiB each" "$(counted "$m")"
"$WSNAP" unmount "$mnt"

# ---- a sequential read of the big member ----
# seqread MOUNT-ARGS...: seconds to cat big.bin through a fresh mount
seqread() {
	local t0 t1
	newmnt
	"$WSNAP" mount "$@" "$mnt" >/dev/null || return 1
	t0=$(now)
	cat "$mnt/big.bin" >/dev/null
	t1=$(now)
	"$WSNAP" unmount "$mnt"
	secs "$t0" "$t1"
}
BYTES=$((MIB << 20))
rate() { echo "$1 s ($(mib_s $BYTES "$1") MiB/s)"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
cp "$www/big.tar" "$www/bign.tar" # no sidecar: the index from the cache
"$WSNAP" check "$U/bign.tar" || exit 1
t0=$(now)
curl -s -o /dev/null "$U/big.tar"
t1=$(now)
curl_t=$(secs "$t0" "$t1")
cat "$www/big.tar" >/dev/null # the local file in the page cache
local_t=$(seqread "$www/big.tar")
locali_t=$(seqread --index "$www/big.tar.wsnapidx" "$www/big.tar")
m=$(log_mark "$NGINX_LOG")
remote_t=$(seqread "$U/big.tar")
reqs=$(counted "$m")
m=$(log_mark "$NGINX_LOG")
remoten_t=$(seqread "$U/bign.tar")
reqsn=$(counted "$m")
row "sequential read, $MIB MiB member, sidecar (digests checked)" "$(rate "$remote_t")" \
	"local file with the same sidecar: $(rate "$locali_t")" \
	"$reqs; $(ratio "$locali_t" "$remote_t")x the local mount"
row "sequential read, $MIB MiB member, cached index" "$(rate "$remoten_t")" \
	"local file: $(rate "$local_t"); curl -o /dev/null: $(rate "$curl_t")" \
	"$reqsn; $(ratio "$local_t" "$remoten_t")x the local mount (target 0.8x)"

# ---- hydrate until usable, against curl | tar -x ----
ws=$work/ws
m=$(log_mark "$NGINX_LOG")
t0=$(now)
"$WSNAP" hydrate "$U/small.tar" "$ws" || exit 1
t1=$(now)
mounts+=("$ws")
hyd=$(secs "$t0" "$t1")
hreq=$(counted "$m")
"$WSNAP" unmount --discard "$ws"
mkdir -p "$work/x"
t0=$(now)
curl -s "$U/small.tar" | tar -x -C "$work/x"
t1=$(now)
ct=$(secs "$t0" "$t1")
row "hydrate usable, $((DIRS * FILES)) files" "$hyd s" "curl | tar -x: $ct s" \
	"$hreq; $(awk -v a="$ct" -v b="$hyd" 'BEGIN { printf "%.1f", a / b }')x sooner (target 20x)"
echo
echo "loopback nginx; load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
