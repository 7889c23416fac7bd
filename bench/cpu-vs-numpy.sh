#!/usr/bin/env bash
# aim's CPU backend against the same GAMP-RIE iteration in NumPy (bench/gamp_rie_numpy.py), in
# one run on one machine: each round times aim on the native BLAS (OpenBLAS), then NumPy under
# the same OpenBLAS core type and thread count, then aim on gonum, and the figures are medians
# over rounds, so a load that comes and goes hits all three alike. Also EigenSym at D = 1000
# against numpy.linalg.eigh (LAPACK dsyevd). Prints the ratios aim / NumPy.
#
#   bench/cpu-vs-numpy.sh                 D = 200 and 400, 7 rounds, with the gonum figures
#   ROUNDS=3 SIZES=200 GONUM=0 bench/cpu-vs-numpy.sh
#
# Needs libopenblas0 and a Python with numpy (python3-numpy; AIM_PYTHON to name another).
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PATH:/usr/local/go/bin"
export AIM_BENCH_ROUNDS="${ROUNDS:-7}" AIM_BENCH_D="${SIZES:-200,400}" AIM_BENCH_GONUM="${GONUM:-1}"
CGO_ENABLED=0 go test -run '^$' -bench 'CPUvsNumPy|EighVsNumPy' -benchtime 1x -timeout 60m . 2>&1 |
	grep -E '^(Benchmark|    numpy_test|goos|cpu:|ok|FAIL|---)|ratio' || true
