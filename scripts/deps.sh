#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what wsnap needs to build, test and benchmark on Debian 12 (root).
# Does nothing when everything is already there.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libfuse3-dev fuse3 libarchive-dev liblzma-dev
      libxxhash-dev libssl-dev libcurl4-openssl-dev
      libcmocka-dev libarchive-tools zstd xz-utils bzip2 lz4 gzip python3
      python3-pip fuse-overlayfs psmisc clang clang-format tar
      libgit2-dev git patch                  # diff --patch and its tests
      e2fsprogs dosfstools xfsprogs bindfs) # destinations of e2e_export_casefold
[ "${WSNAP_BENCH_DEPS:-0}" = 1 ] && pkgs+=(archivemount time)
# tests/e2e/e2e_package.sh builds the Debian package and runs lintian: it is
# skipped without these, and requires them with WSNAP_PACKAGE_TEST=1.
[ "${WSNAP_PACKAGE_TEST:-0}" = 1 ] && pkgs+=(dpkg-dev debhelper lintian)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'ok installed' >/dev/null ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
		--no-install-recommends "${missing[@]}"
fi
