#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# cluster-autoscaler's own estimator, RUNS times over every mix JSON in MIX_DIR (written by
# `ESTIMATOR_MIX_DIR=MIX_DIR cargo bench --bench estimator -- nomatch`), as a TSV on stdout:
# mix, run, nodes, ms. AUTOSCALER is a checkout of kubernetes/autoscaler (the repository, or its
# cluster-autoscaler folder) at a tag with a vendored tree, such as cluster-autoscaler-1.30.0: the
# harness (main.go beside this script) is built against its vendor/ with no module downloads.
#
#   benches/upstream/run.sh AUTOSCALER MIX_DIR RUNS [MIX...] > results.tsv
#
# MIX names the files to run (e.g. memory-heavy-3); all of MIX_DIR's *.json when none is given.
# GO (default: go on PATH, else /usr/lib/go-1.23/bin/go) is the Go toolchain; it must be at least
# the go.mod's version. The binary and Go's build cache go to WORK (default /var/tmp/upstream-estimator,
# kept, so that a second run builds nothing again); the harness is copied to a folder of its own inside
# the checkout's module, as Go's vendor mode needs, and removed on exit.
set -euo pipefail

usage() {
    echo "usage: $0 AUTOSCALER MIX_DIR RUNS [MIX...]" >&2
    exit 2
}
[ $# -ge 3 ] || usage
autoscaler=$1 mix_dir=$2 runs=$3
shift 3
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "RUNS must be a positive integer, got '$runs'" >&2; exit 2; }
[ -d "$mix_dir" ] || { echo "MIX_DIR $mix_dir is not a folder" >&2; exit 2; }

# The module: the checkout itself, or its cluster-autoscaler folder.
module=$autoscaler
[ -f "$module/go.mod" ] || module=$autoscaler/cluster-autoscaler
if ! grep -qx 'module k8s.io/autoscaler/cluster-autoscaler' "$module/go.mod" 2>/dev/null; then
    echo "$autoscaler is not a checkout of kubernetes/autoscaler (no cluster-autoscaler go.mod)" >&2
    exit 2
fi
[ -d "$module/vendor" ] || { echo "$module has no vendor/ tree: use a tag that has one (1.30.0 does)" >&2; exit 2; }

go=${GO:-$(command -v go || echo /usr/lib/go-1.23/bin/go)}
[ -x "$go" ] || { echo "no Go toolchain at '$go' (set GO)" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-/var/tmp/upstream-estimator}
mkdir -p "$work"
harness=$module/ekscale-upstream-estimator
trap 'rm -rf "$harness"' EXIT
mkdir -p "$harness"
cp "$here/main.go" "$harness/main.go"

# Vendored packages only, with the toolchain given: nothing is downloaded.
export GOFLAGS=-mod=vendor GOPROXY=off GOTOOLCHAIN=local GOCACHE=$work/cache GOPATH=$work/gopath
(cd "$module" && "$go" build -o "$work/upstream-estimator" ./ekscale-upstream-estimator)

if [ $# -eq 0 ]; then
    mixes=()
    for f in "$mix_dir"/*.json; do
        [ -e "$f" ] || { echo "no *.json in $mix_dir" >&2; exit 2; }
        mixes+=("$(basename "$f" .json)")
    done
else
    mixes=("$@")
fi

printf 'mix\trun\tnodes\tms\n'
for mix in "${mixes[@]}"; do
    "$work/upstream-estimator" -mix "$mix_dir/$mix.json" -runs "$runs" | sed "s/^/$mix\t/"
done
