#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# cluster-autoscaler's own RunOnce, once, over an ekscale snapshot and the simulated EKS scenario it was made
# on (issue 62's affinity surge: benches/surge.rs writes them with EKSCALE_BENCH_KEEP). AUTOSCALER is
# kubernetes/autoscaler's cluster-autoscaler folder (or the repository) at a release tag with a vendored tree
# (cluster-autoscaler-1.31.5 is the newest that has one); the harness (main.go beside this script) is built
# against its vendor/ with no module downloads, together with a copy of cluster-autoscaler's own main.go
# (func main renamed caMain) so that every cluster-autoscaler flag, and its default, applies. Flags after
# SCENARIO go to cluster-autoscaler (e.g. --cloud-provider=aws --expander=least-waste).
#
#   benches/upstream/runonce/run.sh AUTOSCALER SNAPSHOT.json SCENARIO.yaml [cluster-autoscaler flags...]
#
# GO (default: go on PATH, else /usr/lib/go-1.23/bin/go) is the Go toolchain. The binary and Go's build cache
# go to WORK (default /var/tmp/ca62, kept, so a second run builds nothing again); the harness is copied into
# a folder of its own inside the checkout's module, as Go's vendor mode needs, and removed on exit. Built with
# the `externalgrpc` tag: cluster-autoscaler's cloud provider builder then links no other provider (the AWS
# and GCE SDKs are not needed; the harness uses the test provider).
set -euo pipefail

usage() {
    echo "usage: $0 AUTOSCALER SNAPSHOT SCENARIO [cluster-autoscaler flags...]" >&2
    exit 2
}
[ $# -ge 3 ] || usage
autoscaler=$1 snapshot=$2 scenario=$3
shift 3
[ -f "$snapshot" ] || { echo "SNAPSHOT $snapshot is not a file" >&2; exit 2; }
[ -f "$scenario" ] || { echo "SCENARIO $scenario is not a file" >&2; exit 2; }

module=$autoscaler
[ -f "$module/go.mod" ] || module=$autoscaler/cluster-autoscaler
if ! grep -qx 'module k8s.io/autoscaler/cluster-autoscaler' "$module/go.mod" 2>/dev/null; then
    echo "$autoscaler is not a checkout of kubernetes/autoscaler (no cluster-autoscaler go.mod)" >&2
    exit 2
fi
[ -d "$module/vendor" ] || { echo "$module has no vendor/ tree: use a tag that has one (1.31.5 does, 1.32.x do not)" >&2; exit 2; }
grep -q '^func main() {$' "$module/main.go" || { echo "$module/main.go has no 'func main() {' line to rename" >&2; exit 2; }

go=${GO:-$(command -v go || echo /usr/lib/go-1.23/bin/go)}
[ -x "$go" ] || { echo "no Go toolchain at '$go' (set GO)" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-/var/tmp/ca62}
mkdir -p "$work"
harness=$module/ekscale-upstream-runonce
trap 'rm -rf "$harness"' EXIT
mkdir -p "$harness"
cp "$here/main.go" "$harness/main.go"
sed 's/^func main() {$/func caMain() {/' "$module/main.go" > "$harness/ca_main.go"

# Vendored packages only, with the toolchain given: nothing is downloaded.
export GOFLAGS=-mod=vendor GOPROXY=off GOTOOLCHAIN=local GOCACHE=$work/cache GOPATH=$work/gopath
(cd "$module" && "$go" build -tags externalgrpc -o "$work/ca-runonce" ./ekscale-upstream-runonce)

"$work/ca-runonce" --snapshot "$snapshot" --scenario "$scenario" "$@"
