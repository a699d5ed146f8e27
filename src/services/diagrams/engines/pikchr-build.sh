#!/bin/sh
# Builds pikchr.wasm beside this script from a checkout of Pikchr's source (https://pikchr.org,
# mirrored at github.com/drhsqlite/pikchr): its parser generator (lemon) makes pikchr.c from
# pikchr.y, clang compiles that for WebAssembly against wasi-libc. Debian packages: gcc make clang
# lld wasi-libc. The engine (pikchr.ts) provides the four WASI calls the module imports.
# The pikchr.wasm committed here: Pikchr 1.0, check-in ec28d04c3e (2026-01-02), mirror commit
# 07df7f02ec4ef74b88a7b3dc5aa93131c8b6147e; clang 14 and wasi-libc of Debian 12.
# Usage: pikchr-build.sh <pikchr-source-dir>
set -eu
src=$(cd "$1" && pwd)
out=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -R "$src"/. "$work"
cd "$work"
make pikchr.c
clang --target=wasm32-wasi -O2 -mexec-model=reactor -nostartfiles \
  -Wl,--no-entry -Wl,--strip-all -Wl,-z,stack-size=1048576 -Wl,--max-memory=268435456 \
  -Wl,--export=pikchr -Wl,--export=pikchr_version -Wl,--export=malloc -Wl,--export=free \
  -o "$out/pikchr.wasm" pikchr.c -lm
grep -E 'MANIFEST_UUID|MANIFEST_DATE|RELEASE_VERSION ' VERSION.h
