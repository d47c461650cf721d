#!/usr/bin/env bash
# Install what offcert needs to build and run, only what is missing:
#   libclang-dev         - highs-sys and z3-sys generate their bindings with bindgen
#   pkg-config           - highs-sys finds the prebuilt HiGHS (below) through it
#   cmake                - to compile HiGHS from source when no prebuilt one is found
#   libz3-dev            - the z3 crate links against the system libz3
#   libsqlite3-dev       - rusqlite links against the system SQLite (no bundled C build)
#   z3, cvc5             - command-line solvers that re-check SMT-LIB2 certificates
#   librsvg2-bin         - rsvg-convert: the tests render the SVG pictures (tests/plot.rs)
#   python3-venv, -pip   - only where python3 lacks venv/ensurepip: scripts/test.sh builds the
#                          Python package in a fresh virtual environment
# Then fetch a prebuilt HiGHS (PyPI's `highsbox` wheel, pinned by version and hash)
# into .deps/highs and write .deps/pkgconfig/highs.pc for it; .cargo/config.toml
# points PKG_CONFIG_PATH there. If Python, pip or PyPI is unavailable, this step
# only says so: the build then compiles HiGHS from source (highs-sys features
# `discover` + `build`), which takes about 7 more minutes on 2 cores.
set -euo pipefail
need=()
for p in libclang-dev pkg-config cmake libz3-dev libsqlite3-dev z3 cvc5 librsvg2-bin; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
# The Python package's tests (scripts/test.sh) build it in a fresh virtual
# environment: python3 with venv and pip (Debian splits them off).
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  need+=(python3 python3-venv python3-pip)
fi
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  echo "setup: installing ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

# HiGHS 1.15.1: highs-sys 1.15.0 (Cargo.lock) bundles HiGHS 1.15.0, but PyPI has
# no highsbox 1.15.0; 1.15.1 is the nearest (patch) release. docs/INSTALL.md, "HiGHS version".
HIGHS_VERSION=1.15.1
HIGHS_WHEEL_SHA256=17f30d23ef37488467732b45f141146f7c287826a576b4514ae39a8cc4068b28
root="$(cd "$(dirname "$0")/.." && pwd)"
deps="$root/.deps"
pc="$deps/pkgconfig/highs.pc"
fallback() {
  echo "setup: no prebuilt HiGHS ($1); cargo will compile HiGHS from source (about 7 min on 2 cores)" >&2
}
if [ -f "$deps/highs/lib/libhighs.so" ] && grep -qx "Version: $HIGHS_VERSION" "$pc" 2>/dev/null \
  && grep -qx "prefix=$deps/highs" "$pc"; then
  : # already there, for this clone
elif [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
  fallback "the pinned wheel is for Linux x86_64 only"
elif ! python3 -m pip --version >/dev/null 2>&1; then
  fallback "python3 -m pip is not available"
else
  tmp="$(mktemp -d)"
  echo "highsbox==$HIGHS_VERSION --hash=sha256:$HIGHS_WHEEL_SHA256" >"$tmp/req.txt"
  if timeout 300 python3 -m pip install --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: --require-hashes --target "$tmp/site" -r "$tmp/req.txt" >"$tmp/log" 2>&1 \
    && [ -f "$tmp/site/highsbox/highs_dist/lib/libhighs.so" ]; then
    rm -rf "$deps/highs" "$deps/pkgconfig"
    mkdir -p "$deps/pkgconfig"
    mv "$tmp/site/highsbox/highs_dist" "$deps/highs"
    # The wheel's own highs.pc names the machine it was built on
    # (prefix=/project/HiGHS/highs_dist, libdir=.../lib64); this one names ours.
    cat >"$pc" <<EOF
prefix=$deps/highs
libdir=\${prefix}/lib
includedir=\${prefix}/include/highs

Name: HiGHS
Description: Linear Optimization Software (prebuilt, PyPI highsbox $HIGHS_VERSION)
URL: https://github.com/ERGO-Code/HiGHS
Version: $HIGHS_VERSION
Libs: -L\${libdir} -lhighs
Cflags: -I\${includedir}
EOF
    echo "setup: prebuilt HiGHS $HIGHS_VERSION in $deps/highs" >&2
  else
    fallback "pip could not install highsbox==$HIGHS_VERSION: $(tail -n 1 "$tmp/log")"
  fi
  rm -rf "$tmp"
fi
