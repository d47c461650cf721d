#!/usr/bin/env bash
# Run every cargo-fuzz target for SECS seconds (default 600) from the seeds in
# fuzz/seeds/<target>, on one core each in turn, and print a summary line per
# target (executions, coverage, crashes). Needs `cargo install cargo-fuzz`;
# cargo-fuzz wants a nightly compiler, RUSTC_BOOTSTRAP=1 lets the stable one
# stand in. Crashes land in fuzz/artifacts/<target>/ (git-ignored).
#   bash fuzz/run.sh            # 600 s per target
#   SECS=60 bash fuzz/run.sh kineto
set -euo pipefail
cd "$(dirname "$0")"
SECS="${SECS:-600}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(kineto nsys parse_instance parse_schedule import_chain import_et import_graph)
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  log="artifacts/$t/run.log"
  set +e
  cargo fuzz run -O "$t" "corpus/$t" "seeds/$t" -- \
    -max_total_time="$SECS" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || echo 'cov: ?')
  crashes=$(find "artifacts/$t" -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' | wc -l)
  echo "$t: ${SECS}s, exit $rc, $execs executions, $cov, $crashes crash/oom/timeout files"
done
