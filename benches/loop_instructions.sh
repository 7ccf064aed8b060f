#!/usr/bin/env bash
# The instructions one loop of the shipped binary runs, counted by valgrind's callgrind: a figure this busy
# machine's load does not move, so two trees compare exactly (BENCHMARKS.md, "The first loop, counted").
#
#   benches/loop_instructions.sh BIN_DIR CASE_DIR CASE OUT [simulate flags...]
#
# BIN_DIR holds a release build's ekscale-provider and ekscale-autoscaler; CASE_DIR holds CASE.json (the
# snapshot) and CASE.yaml (the simulated EKS's scenario), as `EKSCALE_BENCH_KEEP=<dir> cargo bench --bench
# runonce -- pending/` or `cargo bench --bench surge` keep them. Only `RunOnce::run` is counted (reading the
# snapshot is not). The extra flags go to `simulate`: a case with searches that a wall-clock budget would cut
# short under valgrind needs `--max-nodegroup-binpacking-duration 1h` (it runs some 50 times slower there).
set -euo pipefail
bin=$1 dir=$2 case=$3 out=$4
shift 4
port=$((45000 + RANDOM % 10000))
"$bin/ekscale-provider" --listen "127.0.0.1:$port" --metrics-listen "127.0.0.1:$((port + 1))" \
    --sim-file "$dir/$case.yaml" >/dev/null 2>&1 &
provider=$!
trap 'kill $provider 2>/dev/null; wait $provider 2>/dev/null || true' EXIT
for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
valgrind --tool=callgrind --callgrind-out-file="$out" \
    '--toggle-collect=ekscale::autoscaler::core::runonce::RunOnce::run::{{closure}}' \
    "$bin/ekscale-autoscaler" simulate --provider "127.0.0.1:$port" --snapshot "$dir/$case.json" \
    --format json "$@" >"$out.json" 2>"$out.log"
grep -E 'Collected' "$out.log"
