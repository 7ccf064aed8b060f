#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Ours against cluster-autoscaler's own estimator, per memory-heavy mix: the lower bound and ours from
# the estimator bench's output, upstream's best / median / worst run and its median ms from run.sh's
# TSV, then how many mixes ours needs fewer, as many or more nodes than upstream's best run on.
#
#   cargo bench --bench estimator -- nomatch > bench.txt
#   benches/upstream/compare.sh bench.txt benches/upstream/results-1.30.0.tsv
#
# The median of an even number of runs is the mean of the middle two.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BENCH_OUTPUT RESULTS.tsv" >&2; exit 2; }
bench=$1 tsv=$2

awk -F'\t' -v bench="$bench" '
function median(list, n,    i, j, t, a) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
BEGIN {
    # The bench tables: a "<family> mixes (...)" title, then "seed | placed | ours | searches alone | upstream |
    # bound | % | ms" rows.
    while ((getline line < bench) > 0) {
        if (line ~ /^memory-heavy[a-z-]* mixes /) { split(line, w, " "); family = w[1]; continue }
        if (line !~ /^[0-9]+ \| /) { if (line !~ /^seed /) family = ""; continue }
        if (family == "") continue
        split(line, f, " \\| ")
        key = family "-" f[1]
        ours[key] = f[3]; bound[key] = f[6]; order[++mixes] = key
    }
    if (mixes == 0) { print bench ": no memory-heavy table (run the estimator bench with -- nomatch)" > "/dev/stderr"; exit 2 }
}
NR > 1 {
    if (!($1 in ours)) { print "mix " $1 " of the TSV is not in " bench > "/dev/stderr"; missing = 1; exit 2 }
    runs[$1]++; nodes[$1] = nodes[$1] " " $3; ms[$1] = ms[$1] " " $4
    if (!($1 in lo) || $3 < lo[$1]) lo[$1] = $3
    if (!($1 in hi) || $3 > hi[$1]) hi[$1] = $3
}
END {
    if (missing) exit 2
    print "mix | lower bound | ours | cluster-autoscaler runs | best / median / worst | its median ms | ours - best"
    for (i = 1; i <= mixes; i++) {
        k = order[i]
        if (!(k in runs)) { print k " | " bound[k] " | " ours[k] " | 0 | - | - | -"; continue }
        d = ours[k] - lo[k]
        if (d < 0) fewer++; else if (d == 0) equal++; else more++
        printf "%s | %s | %s | %d | %s / %s / %s | %s | %+d\n", k, bound[k], ours[k], runs[k], lo[k], median(nodes[k]), hi[k], median(ms[k]), d
    }
    printf "\nagainst the best run: fewer on %d, as many on %d, more on %d (of %d mixes run)\n", fewer, equal, more, fewer + equal + more
}' "$tsv"
