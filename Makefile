# aim: Bayes-optimal learning of attention models. `make demo` and `make test` are the two
# commands a new user runs (README.md).
GO      ?= go
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -X main.version=$(VERSION)
BIN     := bin/aim

.PHONY: build test demo bench lint clean kernels gpu-check-bin

build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/aim

# Every test, then the engine, device, cpu and internal packages again under the race detector (-short skips
# the long accuracy sweeps there).
test:
	$(GO) test ./...
	$(GO) test -race -short ./engine/... ./device/... ./cpu/... ./internal/...

# On the CPU: the softmax T = 2 state evolution for five rho (results/demo/se_softmax.*), and
# GAMP-RIE at D = 100 beside the SE for three of them (results/demo/amp_softmax.*; its SE lines
# are those of se_softmax.csv, so `aim plot se_softmax.csv amp_softmax.csv` redraws it).
demo: build
	$(BIN) se --channel softmax --T 2 --rho 0.1,0.2,0.5,1,2 --alpha 0.001:0.25:128 \
		--out results/demo/se_softmax.csv --plot results/demo/se_softmax.png
	$(BIN) amp --channel softmax --T 2 --rho 0.2,0.5,1 --D 100 --alpha 0.05,0.08,0.11,0.14 --seeds 2 \
		--device cpu --se results/demo/se_softmax.csv --out results/demo/amp_softmax.csv --plot results/demo/amp_softmax.png

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
	cp bench/gpu-check.sh bin/gpu/gpu-check.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin results
