# aim: Bayes-optimal learning of attention models. `make demo` and `make test` are the two
# commands a new user runs (README.md).
GO      ?= go
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -X main.version=$(VERSION)
BIN     := bin/aim

.PHONY: build test test-python demo figures bench lint clean kernels gpu-check-bin docs

build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/aim

# Every test, then the engine, device, backend, cpu and internal packages again under the race detector (-short skips
# the long accuracy sweeps there), then the Python package's (test-python).
test:
	$(GO) test ./...
	$(GO) test -race -short ./engine/... ./device/... ./backend/... ./cpu/... ./internal/...
	$(MAKE) test-python

# The Python package's tests (python/tests, pytest) against bin/aim, run by the first of $(PYTHON),
# python3 and /usr/bin/python3 that has pandas and pytest. Without one they are skipped, saying
# so (Debian: apt-get install python3-pandas python3-pytest); AIM_REQUIRE_PYTHON=1 (CI) makes
# that an error.
PYTHON ?= python3
test-python: build
	@py=""; for p in $(PYTHON) python3 /usr/bin/python3; do \
		if command -v $$p >/dev/null 2>&1 && $$p -c 'import pandas, pytest' 2>/dev/null; then py=$$p; break; fi; \
	done; \
	if [ -z "$$py" ]; then \
		echo "python tests skipped: no python3 with pandas and pytest (Debian: apt-get install python3-pandas python3-pytest)"; \
		[ -z "$$AIM_REQUIRE_PYTHON" ] || exit 1; exit 0; \
	fi; \
	echo "$$py -m pytest python/tests"; AIM_BIN=$(CURDIR)/$(BIN) $$py -m pytest -q python/tests

# On the CPU: the softmax T = 2 state evolution for five rho (results/demo/se_softmax.*), and
# GAMP-RIE at D = 100 beside the SE for three of them (results/demo/amp_softmax.*; its SE lines
# are those of se_softmax.csv, so `aim plot se_softmax.csv amp_softmax.csv` redraws it).
demo: build
	$(BIN) se --channel softmax --T 2 --rho 0.1,0.2,0.5,1,2 --alpha 0.001:0.25:128 \
		--out results/demo/se_softmax.csv --plot results/demo/se_softmax.png
	$(BIN) amp --channel softmax --T 2 --rho 0.2,0.5,1 --D 100 --alpha 0.05,0.08,0.11,0.14 --seeds 2 \
		--device cpu --se results/demo/se_softmax.csv --out results/demo/amp_softmax.csv --plot results/demo/amp_softmax.png

# The README's figures (docs-images/, committed; about a minute on two cores, CPU only): one of
# each kind at small grids, 5 x 3.5 in PNGs. Neither `make test` nor CI regenerates them.
FIG := docs-images
figures: build
	mkdir -p $(FIG)/data
	$(BIN) se --quiet --channel softmax --T 2 --rho 0.1,0.2,0.5,1,2 --alpha 0.001:0.25:64 --size 5x3.5in \
		--out $(FIG)/data/se.csv --plot $(FIG)/se.png
	$(BIN) amp --quiet --channel softmax --T 2 --rho 0.2,0.5,1 --D 60 --alpha 0.04,0.08,0.12,0.16 --seeds 2 --device cpu \
		--se $(FIG)/data/se.csv --size 5x3.5in --out $(FIG)/data/amp.csv --plot $(FIG)/amp.png
	$(BIN) gd --quiet --channel softmax --T 2 --rho 0.5 --D 40 --alpha 0.05,0.1,0.15,0.2 --seeds 2 --device cpu \
		--size 5x3.5in --out $(FIG)/data/gd.csv --plot $(FIG)/gd.png
	$(BIN) se --quiet --channel hardmax --rho 0.5,1 --alpha 0.01:10:48:log --size 5x3.5in \
		--out $(FIG)/data/se_hardmax.csv --plot $(FIG)/se_hardmax.png
	$(BIN) smi se --quiet --alpha 0.1:2:12 --samples 64 --size 5x3.5in --out $(FIG)/data/smi_se.csv --plot $(FIG)/smi_se.png
	$(BIN) gd --quiet --channel linear --rho 0.5 --noise 0.25 --weight-decay 0.1 --R 40 --D 40 --alpha 0.2,0.4,0.6 --seeds 2 \
		--lr 0.05 --max-iter 1500 --device cpu --spectrum $(FIG)/data/gd_spectrum.csv --out $(FIG)/data/gd_erm.csv --plot ""
	$(BIN) erm --quiet --rho 0.5 --noise 0.25 --weight-decay 0,0.1,1 --gd $(FIG)/data/gd_erm.csv --spectrum 0.4 \
		--eigenvalues $(FIG)/data/gd_spectrum.csv --size 5x3.5in --out $(FIG)/data/erm.csv --plot $(FIG)/erm.png
	$(BIN) gd --quiet --channel softmax --T 2 --rho 0.5 --weight-decay 0.01 --D 40 --alpha 0.05,0.1,0.15,0.25 --seeds 2 \
		--lr 0.05 --max-iter 3000 --device cpu --out $(FIG)/data/gd_erm_softmax.csv --plot ""
	$(BIN) erm --quiet --channel softmax --T 2 --rho 0.5 --weight-decay 0,0.01 --alpha 0.04:0.32:8 --samples 4096 \
		--gd $(FIG)/data/gd_erm_softmax.csv --size 5x3.5in --out $(FIG)/data/erm_softmax.csv --plot $(FIG)/erm_softmax.png
	for T in 2 3 4; do \
		$(BIN) se --quiet --channel hardmax --T $$T --rho 0.5 --alpha 0.003:3:48:log --gen-samples 0 --plot "" \
			--out $(FIG)/data/hardmax_T$$T.csv && \
		$(BIN) se --quiet --channel hardmax --T $$T --rescaled --alpha 0.05:3:48:log --gen-samples 0 --plot "" \
			--out $(FIG)/data/hardmax_rescaled_T$$T.csv || exit 1; \
	done
	$(BIN) plot --x alpha-bar --size 5x3.5in --out $(FIG)/hardmax_T.png $(FIG)/data/hardmax_T2.csv \
		$(FIG)/data/hardmax_T3.csv $(FIG)/data/hardmax_T4.csv
	$(BIN) plot --size 5x3.5in --out $(FIG)/hardmax_threshold_T.png $(FIG)/data/hardmax_rescaled_T2.csv \
		$(FIG)/data/hardmax_rescaled_T3.csv $(FIG)/data/hardmax_rescaled_T4.csv
	$(BIN) thresholds --quiet --channel hardmax --T 2:6:5 --size 5x3.5in --out $(FIG)/data/thresholds.csv \
		--plot $(FIG)/thresholds.png
	rm -rf $(FIG)/data

# docs/cli/<command>.md, the reference of every command and its flags, docs/cli/README.md, their
# index, and python/aimtheory/_jobs.py, the Python package's job functions, from the commands'
# flag sets (cmd/aim/reference.go). `make test` fails when they are stale (TestCLIDocs); this
# rewrites them.
docs:
	$(GO) test ./cmd/aim -run '^TestCLIDocs$$' -count=1 -update

# Regenerate kernels/*.ptx from kernels/*.cu with NVRTC (libnvrtc, loaded at run time).
kernels:
	CGO_ENABLED=0 $(GO) run ./kernels/gen -dir kernels

# Test and benchmark binaries for a GPU machine without Go, with the check script beside them:
# copy bin/gpu there and run bin/gpu/gpu-check.sh [OUT] (or bench/gpu-check.sh from the
# repository root).
gpu-check-bin:
	mkdir -p bin/gpu
	CGO_ENABLED=0 $(GO) test -c -o bin/gpu/cuda.test ./device/cuda
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o bin/gpu/aim ./cmd/aim
	cp bench/gpu-check.sh bench/gamp_rie_numpy.py bin/gpu/

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin results
