#!/usr/bin/env bash
# aim's GAMP-RIE for the extensive-width quadratic network (--channel linear --T 1) against the
# authors' own AMP (Maillard et al., arXiv 2408.03733, AMP.ipynb of SPOC-group/
# ExtensiveWidthQuadraticSamples), on one machine: time per iteration and peak memory at the
# same D, alpha = N/D^2, kappa = R/D and label noise. The authors' code is GPL-3 and is not in
# this repository: bench/quadratic_authors.py reads their notebook from AUTHORS_PATH (a clone,
# or a bare git mirror) at run time, runs their data_generation and AMP, and times them.
#
#   bench/quadratic-vs-authors.sh AUTHORS_PATH [D...]      # D defaults to 100 200
#   ROUNDS=5 ITERS=5 THREADS=2 bench/quadratic-vs-authors.sh ~/src/ExtensiveWidthQuadraticSamples 100
#
# alpha 0.25, kappa (aim's --rho) 0.5, noise 0, damping 0.5 and the authors' start (aim
# --paper-init) on both sides. Each round runs, for each D back to back, the authors'
# iteration and then aim's; the figures are medians over ROUNDS rounds (default 3) and the
# ratio the median of each round's ratio, so a load that comes and goes hits both alike.
# s/iter is the mean of iterations 2..ITERS (default 5) on both sides: iteration 1 carries
# one-off setup (the authors' uX = X / sqrt(D), a copy of their N x D x D tensor), and neither
# side's data generation, nor aim's state-evolution solve and startup, is counted. aim's figure
# comes from its --trace CSV (seconds since its iteration loop started). Peak GiB is the peak
# RSS of the whole process on each side (aim: /usr/bin/time -v, or a Python resource wrapper;
# the authors: ru_maxrss, data generation included). OPENBLAS_NUM_THREADS is set to THREADS
# (default: all cores) for both, and aim gets --threads THREADS; OPENBLAS_CORETYPE, if set,
# reaches both. The authors' data hold about three N x D x D float64 arrays at once
# (3 x 8 alpha D^4 bytes: 9 GiB at D = 200); MAX_GIB (default 12) is the most their side may
# be estimated to need, larger D are reported as skipped.
#
# Needs bin/aim (BIN to name another; built with `make build` if missing) and a Python 3 with
# numpy and scipy (AIM_PYTHON, default /usr/bin/python3).
set -euo pipefail
if [ $# -lt 1 ]; then
	sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 2
fi
AUTHORS=$1
shift
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(100 200)
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
BIN=${BIN:-bin/aim}
PY=${AIM_PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-3}
ITERS=${ITERS:-5}
THREADS=${THREADS:-$(nproc)}
MAX_GIB=${MAX_GIB:-12}
ALPHA=0.25 KAPPA=0.5 NOISE=0 DAMPING=0.5 SEED=1
export OPENBLAS_NUM_THREADS=$THREADS
[ "$ITERS" -ge 2 ] || { echo "quadratic-vs-authors: ITERS must be at least 2" >&2; exit 2; }
if [ ! -x "$BIN" ]; then
	echo "quadratic-vs-authors: building $BIN (make build)" >&2
	make build >&2
fi
help=$("$BIN" amp --help 2>&1 || true)
grep -q 'linear' <<<"$help" || {
	echo "quadratic-vs-authors: $BIN amp has no --channel linear; rebuild it (make build)" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# peak_kib CMD...: runs CMD with its stdout and stderr to $tmp/cmd.log, and prints the peak RSS
# in KiB of it (and its children).
peak_kib() {
	if [ -x /usr/bin/time ] && /usr/bin/time -v true >/dev/null 2>&1; then
		/usr/bin/time -v -o "$tmp/time.txt" "$@" >"$tmp/cmd.log" 2>&1 || { cat "$tmp/cmd.log" >&2; return 1; }
		awk -F': *' '/Maximum resident set size/ {print $2}' "$tmp/time.txt"
	else
		LOG="$tmp/cmd.log" "$PY" -c 'import os, resource, subprocess, sys
rc = subprocess.call(sys.argv[1:], stdout=open(os.environ["LOG"], "w"), stderr=subprocess.STDOUT)
if rc:
    sys.exit(rc)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@" || { cat "$tmp/cmd.log" >&2; return 1; }
	fi
}

# aim_run D: one aim run of ITERS iterations; prints "s/iter peak_GiB error".
aim_run() {
	local D=$1 kib
	kib=$(peak_kib "$BIN" amp --channel linear --T 1 --rho "$KAPPA" --noise "$NOISE" --D "$D" --alpha "$ALPHA" \
		--seeds 1 --seed "$SEED" --max-iter "$ITERS" --tol 1e-300 --damping "$DAMPING" --paper-init \
		--threads "$THREADS" --quiet --out "$tmp/aim.csv" --trace "$tmp/trace.csv" --plot '') || return 1
	"$PY" - "$tmp/trace.csv" "$tmp/aim.csv" "$kib" "$ITERS" <<-'EOF'
		import csv, sys
		trace = list(csv.DictReader(open(sys.argv[1])))
		run = list(csv.DictReader(open(sys.argv[2])))[0]
		iters = int(sys.argv[4])
		if len(trace) != iters or int(run["iterations"]) != iters:
		    sys.exit(f"aim ran {run['iterations']} iterations, not {iters}")
		t = [float(r["seconds"]) for r in trace]
		print((t[-1] - t[0]) / (len(t) - 1), int(sys.argv[3]) / 2**20, run["error"])
	EOF
}

# authors_run D: one run of the authors' AMP; prints "s/iter peak_GiB error" or "skip REASON".
authors_run() {
	local D=$1
	if ! "$PY" bench/quadratic_authors.py --authors "$AUTHORS" --D "$D" --alpha "$ALPHA" --kappa "$KAPPA" \
		--noise "$NOISE" --iters "$ITERS" --damping "$DAMPING" --seed "$SEED" --max-gib "$MAX_GIB" \
		>"$tmp/authors.json" 2>"$tmp/authors.err"; then
		if grep -q 'max-gib' "$tmp/authors.err"; then
			echo "skip $(tail -1 "$tmp/authors.err")"
			return 0
		fi
		cat "$tmp/authors.err" >&2
		return 1
	fi
	"$PY" -c 'import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])
print(d["seconds_per_iter"], d["peak_rss_gib"], d["error_final"])' "$tmp/authors.json"
}

declare -A A_S A_G A_E B_S B_G B_E RATIO SKIP
for ((r = 1; r <= ROUNDS; r++)); do
	for D in "${SIZES[@]}"; do
		[ -n "${SKIP[$D]:-}" ] && continue
		out=$(authors_run "$D")
		if [[ $out == skip* ]]; then
			SKIP[$D]=${out#skip }
			continue
		fi
		read -r s g e <<<"$out"
		A_S[$D]+="$s " A_G[$D]+="$g " A_E[$D]+="$e "
		out2=$(aim_run "$D")
		read -r s g e <<<"$out2"
		B_S[$D]+="$s " B_G[$D]+="$g " B_E[$D]+="$e "
		RATIO[$D]+="$(awk -v a="$(cut -d' ' -f1 <<<"$out")" -v b="$s" 'BEGIN {print a / b}') "
		echo "round $r, D = $D: authors $(cut -d' ' -f1 <<<"$out") s/iter, aim $s s/iter" >&2
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
max() { tr ' ' '\n' | grep -v '^$' | sort -g | tail -1; }

core=$(OPENBLAS_VERBOSE=2 "$PY" -c 'import numpy; numpy.ones((2, 2)) @ numpy.ones((2, 2))' 2>&1 | sed -n 's/^Core: //p' | head -1)
aimblas=$(grep -o 'OpenBLAS [^)]*)' "$tmp/aim.json" 2>/dev/null | head -1 || true)
aimver=$("$BIN" version 2>/dev/null | head -1 || true)
pyver=$("$PY" -c 'import numpy, scipy; print("numpy", numpy.__version__, "scipy", scipy.__version__)')
mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 2^20}' /proc/meminfo)
echo "# aim vs the authors' AMP: extensive-width quadratic network, GAMP-RIE"
echo
echo "alpha = $ALPHA, kappa = $KAPPA, noise = $NOISE, damping = $DAMPING, seed $SEED; $ITERS iterations, s/iter the mean of"
echo "iterations 2..$ITERS, medians over $ROUNDS rounds; OPENBLAS_NUM_THREADS=$THREADS for both (aim --threads $THREADS),"
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} (NumPy: OpenBLAS core ${core:-?}; aim: ${aimblas:-?}); $(nproc) cores, $mem."
echo "aim: $BIN, ${aimver:-?}; authors: $AUTHORS, $pyver."
echo "error: ||S-hat - S||^2/D after $ITERS iterations (median; the two differ in their random starts)."
echo
echo "| D | N | authors s/iter | aim s/iter | ratio | authors peak GiB | aim peak GiB | authors error | aim error |"
echo "|---|---|---|---|---|---|---|---|---|"
for D in "${SIZES[@]}"; do
	N=$(awk -v a="$ALPHA" -v d="$D" 'BEGIN {printf "%d", a * d * d}')
	if [ -n "${SKIP[$D]:-}" ]; then
		echo "| $D | $N | skipped | | | | | | |"
		echo "  D = $D: ${SKIP[$D]}" >&2
		continue
	fi
	as=$(median <<<"${A_S[$D]}") bs=$(median <<<"${B_S[$D]}") ratio=$(median <<<"${RATIO[$D]}")
	awk -v d="$D" -v n="$N" -v as="$as" -v bs="$bs" -v ratio="$ratio" -v ag="$(max <<<"${A_G[$D]}")" -v bg="$(max <<<"${B_G[$D]}")" \
		-v ae="$(median <<<"${A_E[$D]}")" -v be="$(median <<<"${B_E[$D]}")" \
		'BEGIN {printf "| %d | %d | %.4g | %.4g | %.1fx | %.2f | %.3f | %.3f | %.3f |\n", d, n, as, bs, ratio, ag, bg, ae, be}'
done
echo
echo "ratio: the median over rounds of authors s/iter / aim s/iter, each pair run back to back. Peak GiB: the largest"
echo "over the rounds."
