#!/usr/bin/env bash
# The GPU check: one command, under 5 minutes on one H200 with a 16-core host, that produces
# every figure needed to judge the CUDA path. Run it on the GPU machine (no Go needed) from the
# repository root, with the binaries `make gpu-check-bin` built on a Go machine (bin/gpu/):
#
#   bench/gpu-check.sh [OUT]        # OUT defaults to results/gpu-check
#
# SKIP="NAME ..." skips the parts so named (reported as skipped), where a session's device time
# is short: e.g. SKIP="bench-cpu bench-gpu-4000-gd".
#
# Everything lands under OUT: one log per part, the bench CSVs, manifests and figures, and
# summary.txt (the table, printed last). It never changes the GPU's settings.
#
# Parts, most important first, each under a timeout; a part's timeout is also cut to what is
# left of TOTAL (default 365 s), so the whole stays under 6.5 minutes even if something hangs,
# and the parts that did not fit are reported as skipped. Expected times assume H200 FP64
# Dgemm ~ 55 TFLOP/s; one GAMP-RIE iteration at D = 4000, alpha = 0.25, T = 2 counts
# 4 N T D^2 = 5.1e14 flops (~9 s), and its time grows like D^4.
#   1. nvidia-smi                                         limit  10 s, expected  1 s
#   2. aim device (drivers, GPUs, libraries found)        limit  60 s, expected  2 s
#   3. GPU tests, verbose (every kernel against its CPU twin, GaussianFill bits, NCCL on one
#      rank, the JIT log, GAMP-RIE at D = 200 against the CPU), the big ones excepted
#                                                         limit  60 s, expected 20-30 s
#   4. aim bench on the GPU, stored D = 500, 1000, 2000 and streamed D = 500, 1000, 2000: a
#      warm-up then 3 timed GAMP-RIE iterations and GD steps, per-operation seconds, GFLOP/s
#      against the GPU's 8192 Dgemm (D = 2000: 3.2e13 flops a pass, ~0.6 s; 4 AMP iterations,
#      5 GD passes and the data per mode)                limit  45 s, expected 20 s
#  4a. the candidates for fp64 at its Gemm rate: streamed GAMP-RIE at D = 2000 with the next
#      chunk drawn on the second stream against one drawn in turn (BenchmarkAMPStreamedPrefetch:
#      2 data sets and 3 iterations each way), and the back-projection by Dsyrkx against
#      TokenMix then Gemm at D = 1000 and 2000 (BenchmarkBackProjection)
#                                                         limit  45 s, expected 25 s
#  4b. aim bench on the GPU at fp32, tf32 and bf16x9 (the two large contractions; the rest
#      fp64), stored D = 2000, each against its own precision's 8192 product rate
#                                                         limit  50 s, expected 25-35 s
#  4c. cuBLAS's FP64 emulation switched on (CUBLAS_EMULATE_DOUBLE_PRECISION=1): the Gemm and
#      GAMP-RIE tests against the CPU and the Dgemm rates     limit  45 s, expected 20 s
#   5. the big GPU tests, AIM_GPU_BIG=1: the > 2^31-value token test (about 90 GiB) and a
#      D = 1000 GAMP-RIE trajectory against the CPU's    limit  90 s, expected 30-60 s
#   6. aim bench on the GPU, streamed D = 4000, GAMP-RIE (the data, a warm-up, 3 iterations:
#      ~4.5 passes of 5.1e14 flops)                      limit  75 s, expected 45-55 s
#   7. aim bench on the CPU backend of the same host, stored D = 500, 1000 and streamed D = 500,
#      so that each GPU row has its CPU ratio at a common D (D = 1000: 2e12 flops a pass,
#      3.7 s an AMP iteration on the H200 host's 16 cores, with 7 s of data; measured 69 s
#      in all on the H200's host, when a 60 s limit cut it) limit 100 s, expected 70 s
#   8. the same streamed D = 4000 for GD (gd.Run also evaluates the loss after its last step:
#      5 passes), if the budget allows                   limit  75 s, expected 50-60 s
#   9. the Go GPU benchmarks, warm (-test.benchtime=2x: Dgemm, forward and back-projection,
#      GAMP-RIE at D = 1000 and 2000, the largest D that fits, GD steps, averaged GD's 8
#      restarts one at a time and batched at D = 100, 200 and 500, the eigendecomposition by
#      syevd, syevj and the host at D = 500, 1000 and 2000, the SMI deep channel's sampler at
#      L = 3 and 4 beside the host's CPU), if the budget allows
#                                                         limit  75 s, expected 55 s
#  10. GAMP-RIE with the hardmax channel at T = 3 (the polytope kernel hardmaxt_gout), D = 150,
#      alpha = 0.2, 5 iterations, on the GPU and then on the CPU (seconds in the CSVs; ~80 s a
#      CPU iteration on 2 cores with the default rule, --points 64: ~3 s)
#                                                         limit 2 x 40 s, expected 10-40 s
#  11. GAMP-RIE of the quadratic network (the linear channel, composed of vector kernels) at
#      D = 2000, alpha = 0.2, rho = 0.5, streamed, 40 iterations, beside its SE (se_mmse in
#      the CSV; 0.3922, and 0.3932 at D = 1000 on the CPU)   limit 45 s, expected 15-25 s
#  11b. the CuPy peer (bench/gamp_rie_numpy.py --xp cupy) at D = 1000 and 2000, beside aim's
#      stored rows of part 4 in the summary               limit  60 s, expected 20-40 s
#  12. D = 8000, streamed: GAMP-RIE at bf16x9, a GD step at tf32, GAMP-RIE at tf32 (two
#      iterations, or a step and the evaluation; 8.2e15 flops a pass, and the data), if the
#      budget allows (TOTAL=700 reaches the first two)
#                                                         limit 3 x 150 s, expected 90-150 s each
#  13. summary: the bench CSVs merged and drawn, the table (with each row's precision and its
#      fraction of its own precision's product rate)
set -u
OUT=${1:-${OUT:-results/gpu-check}}
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${BIN:-}" ]; then
	BIN=bin/gpu
	[ -x "$here/aim" ] && BIN=$here # run from inside bin/gpu (make gpu-check-bin copies this script there)
fi
TOTAL=${TOTAL:-365}
mkdir -p "$OUT"
rm -f "$OUT"/bench-*.csv "$OUT"/bench-*.json "$OUT"/bench-*.png # a previous run's, which the summary would merge
export CUDA_CACHE_PATH=${CUDA_CACHE_PATH:-$OUT/cuda-cache}
# On the GPU machine a skipped GPU test is a failure: the point is to run them.
export AIM_REQUIRE_GPU=${AIM_REQUIRE_GPU:-1}
# The big-size GPU tests (a > 2^31-value token buffer, GAMP-RIE at D = 1000 against the CPU) run
# in a part of their own, so that a slow CPU twin cannot cost the other tests' results.
big='TestGPUBigTokens|TestAMPTrajectoryD1000CPUvsGPU'
start=$(date +%s)
parts=()

# limit N: the timeout of the next part, N seconds or what is left of TOTAL (less 8 s for the
# summary and the kill grace), whichever is smaller; 0 when nothing is left.
limit() {
	local left=$((TOTAL - 8 - ($(date +%s) - start)))
	if [ "$left" -lt 5 ]; then
		echo 0
	elif [ "$left" -lt "$1" ]; then
		echo "$left"
	else
		echo "$1"
	fi
}

# part NAME SECONDS COMMAND...: runs COMMAND under a timeout (TERM, then KILL 3 s later), its
# output shown and kept in OUT/NAME.log, and records its exit status and seconds. A command
# that contains {T} gets the timeout, less 5 s, in its place (for -test.timeout, so that a
# hung Go test prints its stack before the kill).
part() {
	local name=$1 want=$2
	shift 2
	local t
	t=$(limit "$want")
	if [[ " ${SKIP:-} " == *" $name "* ]]; then
		printf '\n== %s: skipped (SKIP)\n' "$name"
		parts+=("$name skipped 0")
		return
	fi
	printf '\n== %s (limit %s s)\n' "$name" "$t"
	if [ "$t" -eq 0 ]; then
		echo "skipped: the ${TOTAL} s budget is spent" | tee "$OUT/$name.log"
		parts+=("$name skipped 0")
		return
	fi
	local args=() a
	for a in "$@"; do args+=("${a//\{T\}/$((t > 10 ? t - 5 : t))}"); done
	local t0 rc
	t0=$(date +%s)
	timeout -k 3 "$t" "${args[@]}" 2>&1 | tee "$OUT/$name.log"
	rc=${PIPESTATUS[0]}
	[ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && echo "timed out after $t s" | tee -a "$OUT/$name.log"
	parts+=("$name $rc $(($(date +%s) - t0))")
}

bench=("$BIN/aim" bench --quiet --alpha 0.25 --T 2 --rho 0.5 --repeat 3)

part nvidia-smi 10 nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,compute_cap,clocks.max.sm,power.limit --format=csv
part device 60 "$BIN/aim" device
part gpu-tests 60 "$BIN/cuda.test" -test.v -test.count=1 -test.skip "$big" -test.timeout={T}s
part bench-gpu 45 "${bench[@]}" --device cuda:0 --D 500,1000,2000 --streamed-D 500,1000,2000 \
	--out "$OUT/bench-gpu.csv" --plot "$OUT/bench-gpu.png"
# Each reduced precision against its own product rate (gemm_gflops, fraction_of_gemm), D = 2000
# stored: the same iteration and step with the two large contractions at fp32, tf32 and bf16x9.
candidates='AMPStreamedPrefetch|BackProjection'
part gpu-candidates 45 "$BIN/cuda.test" -test.run='^$' -test.bench="$candidates" -test.benchtime=1x -test.timeout={T}s
part bench-gpu-precision 50 "${bench[@]}" --device cuda:0 \
	--D 2000 --streamed-D none --precision fp32,tf32,bf16x9 --out "$OUT/bench-gpu-precision.csv" --plot ""
# cuBLAS 13's FP64 emulation on the integer tensor cores (the Ozaki scheme), documented for
# Blackwell: does it engage on this GPU, and does it keep fp64's accuracy? The same Dgemm
# calls with the library's switches on (CUBLAS_EMULATE_DOUBLE_PRECISION=1, strategy eager):
# the products and GAMP-RIE against the CPU (1e-12 and 1e-8), and the Dgemm, forward and
# back-projection rates, to set beside gpu-bench's.
part fp64-emulation 45 env CUBLAS_EMULATE_DOUBLE_PRECISION=1 CUBLAS_EMULATION_STRATEGY=eager "$BIN/cuda.test" -test.v \
	-test.run 'TestGPUGemm$|TestAMPTrajectoryCPUvsGPU$' -test.bench 'CublasDgemm|ForwardBack' -test.benchtime=2x -test.timeout={T}s
part gpu-big 90 env AIM_GPU_BIG=1 "$BIN/cuda.test" -test.v -test.count=1 -test.run "$big" -test.timeout={T}s
part bench-gpu-4000-amp 75 "${bench[@]}" --device cuda:0 --D none --streamed-D 4000 --algorithms amp \
	--out "$OUT/bench-gpu-4000-amp.csv" --plot ""
part bench-cpu 100 "${bench[@]}" --device cpu --D 500,1000 --streamed-D 500 \
	--out "$OUT/bench-cpu.csv" --plot "$OUT/bench-cpu.png"
part bench-gpu-4000-gd 75 "${bench[@]}" --device cuda:0 --D none --streamed-D 4000 --algorithms gd \
	--out "$OUT/bench-gpu-4000-gd.csv" --plot ""
part gpu-bench 75 "$BIN/cuda.test" -test.run='^$' -test.bench=. -test.skip="$candidates" -test.benchtime=2x -test.timeout={T}s
# GAMP-RIE with the hardmax polytope channel at T = 3 (kernel hardmaxt_gout), D = 150, alpha =
# 0.2 (N = 4500): 5 iterations on the GPU, then the same on the CPU; the CSVs' seconds give
# the ratio.
for dev in cuda cpu; do
	part "amp-hardmax-t3-$dev" 40 "$BIN/aim" amp --quiet --channel hardmax --T 3 --D 150 --rho 0.5 --alpha 0.2 \
		--seeds 1 --max-iter 5 --device "$dev" --out "$OUT/amp-hardmax-t3-$dev.csv" --plot ""
done

# The quadratic network at D = 2000 on the GPU: its error beside the SE's in the CSV.
part amp-linear-2000 45 "$BIN/aim" amp --quiet --channel linear --rho 0.5 --D 2000 --alpha 0.2 --seeds 1 \
	--max-iter 40 --tokens streamed --device cuda --out "$OUT/amp-linear-2000.csv" --plot ""

# The peer: the same GAMP-RIE iteration written as a careful CuPy user would (bench/gamp_rie_numpy.py
# --xp cupy: cuBLAS products, cupy.linalg.eigh), D = 1000 and 2000, 4 iterations of which the
# first is a warm-up; the summary sets its median iteration beside aim's (bench-gpu, stored).
part cupy-peer 60 bash -c "for D in 1000 2000; do python3 '$here/gamp_rie_numpy.py' --xp cupy --D \$D --alpha 0.25 --rho 0.5 --T 2 --iters 4 || exit; done"

# D = 8000 (N = 1.6e7), streamed: GAMP-RIE with the two large contractions at bf16x9 (the
# precision the accuracy study allows for it), a GD step at tf32 (which the study allows for GD),
# then GAMP-RIE at tf32. Two iterations, or one step and the final evaluation (8.2e15 flops a
# pass; about 190 s at fp64); the CSVs' seconds include drawing the teacher and the outputs
# (one fp64 pass of the forward product, about 75 s).
part amp-8000-bf16x9 150 "$BIN/aim" amp --quiet --channel softmax --T 2 --rho 0.5 --D 8000 --alpha 0.25 --seeds 1 \
	--max-iter 2 --tokens streamed --device cuda --precision bf16x9 --out "$OUT/amp-8000-bf16x9.csv" --plot ""
part gd-8000-tf32 150 "$BIN/aim" gd --quiet --T 2 --rho 0.5 --D 8000 --alpha 0.25 --seeds 1 \
	--max-iter 1 --tokens streamed --device cuda --precision tf32 --out "$OUT/gd-8000-tf32.csv" --plot ""
part amp-8000-tf32 150 "$BIN/aim" amp --quiet --channel softmax --T 2 --rho 0.5 --D 8000 --alpha 0.25 --seeds 1 \
	--max-iter 2 --tokens streamed --device cuda --precision tf32 --out "$OUT/amp-8000-tf32.csv" --plot ""

# The bench CSVs, merged (one header) and drawn on one figure.
csvs=()
for f in bench-gpu bench-gpu-precision bench-gpu-4000-amp bench-gpu-4000-gd bench-cpu; do
	[ -s "$OUT/$f.csv" ] && csvs+=("$OUT/$f.csv")
done
if [ "${#csvs[@]}" -gt 0 ]; then
	{
		head -n 1 "${csvs[0]}"
		for f in "${csvs[@]}"; do tail -n +2 "$f"; done
	} >"$OUT/bench-all.csv"
	timeout 20 "$BIN/aim" plot "$OUT/bench-all.csv" --out "$OUT/bench-all.png" >/dev/null 2>&1
fi

printf '\n== summary\n'
{
	printf '%-22s %-8s %s\n' part status seconds
	for p in "${parts[@]}"; do
		set -- $p
		printf '%-22s %-8s %s\n' "$1" "$2" "$3"
	done
	for log in gpu-tests gpu-big; do
		[ -s "$OUT/$log.log" ] || continue
		# A test's "cpu" subtest is its harness on the cpu stand-in, which skips where the GPU
		# ran it: those skips are not counted.
		printf '\n%s: %s passed, %s failed, %s skipped\n' "$log" "$(grep -c -- '--- PASS' "$OUT/$log.log")" \
			"$(grep -c -- '--- FAIL' "$OUT/$log.log")" "$(grep -- '--- SKIP' "$OUT/$log.log" | grep -vc -- '/cpu ')"
		grep -E -- '--- (FAIL|SKIP)' "$OUT/$log.log" | grep -v -- '--- SKIP: .*/cpu ' | head -n 20
	done
	if [ -s "$OUT/bench-all.csv" ]; then
		printf '\naim bench: median seconds of one iteration, GFLOP/s, fraction of the device Dgemm, CPU/GPU time\n'
		printf 'at the same algorithm, D and tokens; per-operation shares of the median iteration in %%\n'
		awk -F, '
			FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
			{
				n++
				for (k in c) v[n, k] = $c[k]
				if (!("precision" in c)) v[n, "precision"] = "fp64"
				if ($c["device"] == "cpu") cpu[$c["algorithm"] " " $c["D"] " " $c["tokens"] " " v[n, "precision"]] = $c["seconds_median"]
			}
			END {
				split("gemm_s quadformsum_s tokendots_s tokenmix_s channel_s eighsym_s spectral_s gaussian_s other_s collective_s host_s", ops, " ")
				split("gemm qform tdots tmix chan eigh spec gauss other coll host", short, " ")
				printf "%-7s %-4s %5s %-8s %-6s %10s %8s %6s %6s %6s %7s", "device", "alg", "D", "tokens", "prec", "seconds", "GFLOP/s", "dgemm", "gemm", "cpu/x", "gen_s"
				for (k = 1; k <= 11; k++) printf " %5s", short[k]
				printf "\n"
				for (i = 1; i <= n; i++) {
					s = v[i, "seconds_median"]
					key = v[i, "algorithm"] " " v[i, "D"] " " v[i, "tokens"] " " v[i, "precision"]
					ratio = (v[i, "device"] != "cpu" && (key in cpu)) ? sprintf("%.1f", cpu[key] / s) : "-"
					printf "%-7s %-4s %5s %-8s %-6s %10.4g %8.1f %6.3f %6.3f %6s %7.3g", v[i, "device"], v[i, "algorithm"], v[i, "D"], v[i, "tokens"],
						v[i, "precision"], s, v[i, "gflops"], v[i, "fraction_of_dgemm"], v[i, "fraction_of_gemm"], ratio, v[i, "generate_s"]
					for (k = 1; k <= 11; k++) printf " %5.1f", 100 * v[i, ops[k]] / s
					printf "\n"
				}
				for (i = 1; i <= n; i++) if (!(v[i, "device"] in seen)) {
					seen[v[i, "device"]] = 1
					printf "Dgemm rate %s: %.1f GFLOP/s\n", v[i, "device"], v[i, "dgemm_gflops"]
				}
			}' "$OUT/bench-all.csv"
	fi
	if grep -q '"xp": "cupy"' "$OUT/cupy-peer.log" 2>/dev/null && [ -s "$OUT/bench-all.csv" ]; then
		printf '\nGAMP-RIE against the CuPy port (median seconds of one iteration, stored tokens, fp64)\n'
		python3 - "$OUT/cupy-peer.log" "$OUT/bench-all.csv" <<'PY'
import csv, json, sys
peer = {}
for line in open(sys.argv[1]):
    if line.startswith('{'):
        r = json.loads(line)
        peer[r['D']] = r['median_per_iter']
aim = {}
for r in csv.DictReader(open(sys.argv[2])):
    if r['device'] != 'cpu' and r['algorithm'] == 'amp' and r['tokens'] == 'stored' and r.get('precision', 'fp64') in ('', 'fp64'):
        aim[int(r['D'])] = float(r['seconds_median'])
print(f"{'D':>6} {'aim':>10} {'CuPy':>10} {'CuPy/aim':>9}")
for D in sorted(peer):
    a = aim.get(D)
    print(f"{D:>6} {a if a else float('nan'):>10.4g} {peer[D]:>10.4g} {peer[D] / a if a else float('nan'):>9.2f}")
PY
	fi
	for log in gpu-candidates gpu-bench fp64-emulation; do
		if grep -q -E '^Benchmark' "$OUT/$log.log" 2>/dev/null; then
			printf '\nGo GPU benchmarks, %s\n' "$log"
			grep -E '^Benchmark' "$OUT/$log.log" | awk '{ name = $1; $1 = ""; $2 = ""; printf "%-44s %s\n", name, $0 }'
		fi
	done
	if [ -s "$OUT/fp64-emulation.log" ]; then
		printf '\nfp64-emulation tests: %s passed, %s failed\n' "$(grep -c -- '--- PASS' "$OUT/fp64-emulation.log")" \
			"$(grep -c -- '--- FAIL' "$OUT/fp64-emulation.log")"
	fi
	printf '\n%-22s %s s (budget %s s)\n' "wall time" "$(($(date +%s) - start))" "$TOTAL"
} | tee "$OUT/summary.txt"

# Exit 0 only when every part ran and succeeded.
for p in "${parts[@]}"; do
	set -- $p
	[ "$2" = 0 ] || exit 1
done
exit 0
