#!/usr/bin/env bash
# GAMP-RIE with the hardmax channel against its state evolution, on a GPU: the runs behind
# docs/validation/hardmax-gamp.md. Run it on the GPU machine from the repository root with the
# binaries of `make gpu-check-bin` (bin/gpu/aim), after bench/gpu-check.sh or alone:
#
#   bench/hardmax-gamp.sh [OUT]      # OUT defaults to results/hardmax-gamp
#
# Each part is one `aim amp` invocation under a timeout (TERM, which ends the invocation after its run in flight with the finished rows written, then KILL 15 s later), with its
# CSV, manifest and --trace CSV (every iteration: error, step, estimated distance, damping) in
# OUT; the parts run most important first and the whole stops at TOTAL seconds (default 270).
# rho = 0.5 throughout; the default stopping rule (the estimated distance of S-hat to the fixed
# point below 1e-5) and the hardmax default damping (undamped start, raised on a cycle).
#   T = 2, alpha-bar = 4 alpha in {1, 2, 4, 8, 10}: D = 500 (seeds 1, 2), D = 1000 (seed 1, then
#   seed 2), D = 2000 at alpha-bar 1 and 2 (seed 1); the damped start of the paper (0.5) at
#   D = 1000, alpha-bar 4, 150 iterations without the stopping rule, for iterations to 1e-4;
#   T = 3 at D = 500, alpha-bar 1 and 3 (64 points per shift of g_out's lattice, the default),
#   and alpha-bar 3 at 256 points; T = 4 at D = 300, alpha = 0.05.
set -u
OUT=${1:-${OUT:-results/hardmax-gamp}}
BIN=${BIN:-bin/gpu}
DEV=${DEV:-cuda:0}
TOTAL=${TOTAL:-270}
mkdir -p "$OUT"
start=$(date +%s)

# run NAME SECONDS ARGS...: aim amp ARGS on the GPU, at most SECONDS or what is left of TOTAL.
run() {
	local name=$1 want=$2
	shift 2
	local left=$((TOTAL - ($(date +%s) - start)))
	[ "$left" -lt "$want" ] && want=$left
	if [ "$want" -lt 5 ]; then
		echo "== $name: skipped, the $TOTAL s budget is spent"
		return
	fi
	local t0=$(date +%s)
	timeout -k 15 "$want" "$BIN/aim" amp --quiet --channel hardmax --rho 0.5 --device "$DEV" --plot "" \
		--out "$OUT/$name.csv" --trace "$OUT/$name.trace.csv" "$@" >"$OUT/$name.log" 2>&1
	echo "== $name: exit $? in $(($(date +%s) - t0)) s (limit $want s)"
	[ -s "$OUT/$name.csv" ] && cut -d, -f2,6,9-17 "$OUT/$name.csv"
}

run t2-d500 40 --T 2 --D 500 --alpha 0.25,0.5,1,2,2.5 --seeds 2
run t2-d1000-s1 80 --T 2 --D 1000 --alpha 0.25,0.5,1,2,2.5 --seeds 1
run t2-d1000-damped 40 --T 2 --D 1000 --alpha 1 --seeds 1 --damping 0.5 --max-iter 150 --tol 1e-300
run t3-d500 50 --T 3 --D 500 --alpha 0.1,0.3 --seeds 1
run t2-d2000 60 --T 2 --D 2000 --alpha 0.25,0.5 --seeds 1
run t3-d500-p256 40 --T 3 --D 500 --alpha 0.3 --seeds 1 --points 256
run t2-d1000-s2 80 --T 2 --D 1000 --alpha 0.25,0.5,1,2,2.5 --seeds 1 --seed 2
run t4-d300 40 --T 4 --D 300 --alpha 0.05 --seeds 1
echo "hardmax-gamp: $(($(date +%s) - start)) s in all"
