#!/usr/bin/env bash
# The test command (README): the Rust tests (`cargo test --release`), then the
# Python package built with `pip install .` into a fresh virtual environment
# (with its test extra: pytest, pandas, ray) and its pytest suite
# (python/tests). .ci/run calls this script.
#
# One maturin release build of the extension, in the same target dir as the
# Rust tests (CARGO_TARGET_DIR, default ./target), so that it shares what it can.
# OFFCERT_SKIP_CARGO_TEST=1 runs the Python half only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "${OFFCERT_SKIP_CARGO_TEST:-0}" != 1 ]; then
  cargo test --release 2>&1
fi
venv="$(mktemp -d "${TMPDIR:-/tmp}/offcert-venv.XXXXXX")"
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
echo "test: building the Python package into $venv" >&2
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" \
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check ".[test]"
"$venv/bin/python" -m pytest -q python/tests 2>&1
