#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what wsnap needs to build, test and benchmark on Debian 12 (root).
# Does nothing when everything is already there.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libfuse3-dev fuse3 libarchive-dev liblzma-dev
      zlib1g-dev libisal-dev libzstd-dev
      libxxhash-dev libssl-dev libcurl4-openssl-dev
      libcmocka-dev libarchive-tools zstd xz-utils bzip2 lz4 gzip python3
      python3-pip fuse-overlayfs psmisc clang clang-format tar
      libgit2-dev git patch                  # diff --patch and its tests
      e2fsprogs dosfstools xfsprogs bindfs # destinations of e2e_export_casefold
      nginx openssl curl iproute2 procps)   # the remote tests' servers, CA, client, ss, pgrep
# the S3 test server (s3rver) comes from npm, with the machine's Node.js or
# Debian's
command -v npm >/dev/null || pkgs+=(npm)
[ "${WSNAP_BENCH_DEPS:-0}" = 1 ] && pkgs+=(archivemount time)
# tests/e2e/e2e_package.sh builds the Debian package and runs lintian: it is
# skipped without these, and requires them with WSNAP_PACKAGE_TEST=1.
[ "${WSNAP_PACKAGE_TEST:-0}" = 1 ] && pkgs+=(dpkg-dev debhelper lintian)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'ok installed' >/dev/null ||
		missing+=("$p")
done
SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
if [ ${#missing[@]} -gt 0 ]; then
	# The tests start nginx themselves, on loopback ports of their own: the
	# package's service must not start on port 80 (policy-rc.d 101 forbids
	# it while installing, unless one is there already) nor at boot.
	policy=
	if [[ " ${missing[*]} " == *" nginx "* ]] && [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
		$SUDO chmod 755 "$policy"
	fi
	$SUDO apt-get update -qq
	rc=0
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null || rc=$?
	[ -z "$policy" ] || $SUDO rm -f "$policy"
	[ $rc = 0 ] || exit $rc
	if [[ " ${missing[*]} " == *" nginx "* ]]; then
		if [ -d /run/systemd/system ]; then
			$SUDO systemctl disable --now nginx >/dev/null 2>&1 || true
		else
			$SUDO service nginx stop >/dev/null 2>&1 || true
			$SUDO update-rc.d nginx disable >/dev/null 2>&1 || true
		fi
	fi
fi

# s3rver for tests/lib/remote_lib.sh, at the versions of tests/npm's lock
# file, in its own prefix (WSNAP_NPM_PREFIX, default /opt/wsnap-test-npm);
# reinstalled only when the lock file changes.
src=$(cd "$(dirname "$0")/.." && pwd)
npm_prefix=${WSNAP_NPM_PREFIX:-/opt/wsnap-test-npm}
stamp=$(cat "$src/tests/npm/package.json" "$src/tests/npm/package-lock.json" |
	sha256sum | cut -d' ' -f1)
if [ "$(cat "$npm_prefix/.wsnap-stamp" 2>/dev/null)" != "$stamp" ] ||
	[ ! -x "$npm_prefix/node_modules/.bin/s3rver" ]; then
	$SUDO mkdir -p "$npm_prefix"
	$SUDO cp "$src/tests/npm/package.json" "$src/tests/npm/package-lock.json" \
		"$npm_prefix/"
	(cd "$npm_prefix" && $SUDO npm ci --omit=dev --no-audit --no-fund \
		--loglevel=error >/dev/null)
	echo "$stamp" | $SUDO tee "$npm_prefix/.wsnap-stamp" >/dev/null
fi
