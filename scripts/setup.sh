#!/usr/bin/env bash
# Install the system packages offcert needs, only those missing:
#   cmake, libclang-dev  - to build HiGHS (highs-sys runs cmake and bindgen)
#   libz3-dev            - the z3 crate links against the system libz3
#   z3, cvc5             - command-line solvers that re-check SMT-LIB2 certificates
#   librsvg2-bin         - rsvg-convert: the tests render the SVG pictures (tests/plot.rs)
set -euo pipefail
need=()
for p in cmake libclang-dev libz3-dev z3 cvc5 librsvg2-bin; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  echo "setup: installing ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
