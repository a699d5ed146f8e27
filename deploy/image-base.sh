#!/usr/bin/env bash
# Builds, without an image registry, a stand-in for the official node:<major>-bookworm-slim base of
# deploy/Dockerfile: Debian bookworm (mmdebstrap, minbase, docs and man pages left out as the slim
# images do) with Node copied into /usr/local/bin and npm unpacked into /usr/local/lib/node_modules,
# where the official image keeps them. Writes a root file system tarball for `podman import` and
# prints its path. The tarball is cached under ~/.cache/devutil/image-base/, named by the hash of its
# inputs (this script, the Node binary's version, the npm version, the suite and the mirror), so it
# is built once per change of those.
#
#   deploy/image-base.sh [NODE_BINARY]      (default: the `node` on PATH)
#
# Needs root (mmdebstrap's root mode), mmdebstrap, npm and the Debian mirror.
# Where this machine's HTTPS goes through an intercepting proxy (NODE_EXTRA_CA_CERTS set), that CA
# bundle is copied to /usr/local/share/devutil-ci/extra-ca.pem so that npm in the build can trust it
# too (the importer sets NODE_EXTRA_CA_CERTS to it).
set -euo pipefail

NODE_BIN="$(command -v "${1:-node}")"
NPM_VERSION="${DEVUTIL_IMAGE_NPM_VERSION:-11.19.1}"
SUITE=bookworm
MIRROR="${DEVUTIL_IMAGE_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${DEVUTIL_IMAGE_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/devutil/image-base"

EXTRA_CA="${NODE_EXTRA_CA_CERTS:-}"
node_version="$("$NODE_BIN" --version)"
key="$( { cat "$0"; [ -n "$EXTRA_CA" ] && cat "$EXTRA_CA"
  echo "$node_version $NPM_VERSION $SUITE $MIRROR $SECURITY_MIRROR $(uname -m)"; } \
  | sha256sum | cut -c1-16)"
out="$CACHE/$SUITE-node${node_version#v}-$key.tar"
mkdir -p "$CACHE"
# Two callers at once (two test runs) build it once: the second waits for the first's tarball.
exec 9>"$CACHE/.lock"
flock 9
if [ -s "$out" ]; then
  echo "$out"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)

# The mirrors here may serve a dated snapshot: Valid-Until would fail `apt-get update` in the build.
# The hooks get the root directory as $1 when they run, hence the single quotes.
# shellcheck disable=SC2016
mmdebstrap --quiet --variant=minbase --mode=root --format=tar --include=libatomic1 \
  --aptopt='Acquire::Check-Valid-Until "false"' \
  --aptopt='Acquire::Languages "none"' \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook="install -m 0755 '$NODE_BIN' \"\$1/usr/local/bin/node\"" \
  --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules/npm\" && tar -xzf '$work/npm-$NPM_VERSION.tgz' --strip-components=1 --no-same-owner -C \"\$1/usr/local/lib/node_modules/npm\"" \
  --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm" && ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
  --customize-hook="if [ -n '$EXTRA_CA' ]; then install -D -m 0644 '$EXTRA_CA' \"\$1/usr/local/share/devutil-ci/extra-ca.pem\"; fi" \
  --customize-hook='chroot "$1" node --version >/dev/null && chroot "$1" npm --version >/dev/null' \
  "$SUITE" "$work/base.tar" \
  "deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" "deb $SECURITY_MIRROR $SUITE-security main"
mv "$work/base.tar" "$out"
# Keep only the newest three tarballs.
find "$CACHE" -maxdepth 1 -name '*.tar' -printf '%T@ %p\n' | sort -rn | tail -n +4 | cut -d' ' -f2- \
  | xargs -r rm -f
echo "$out"
