# aim: Bayes-optimal learning of attention models. `make demo` and `make test` are the two
# commands a new user runs (README.md).
GO      ?= go
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -X main.version=$(VERSION)
BIN     := bin/aim

.PHONY: build test demo bench lint clean

build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/aim

test:
	$(GO) test ./...

# The softmax T = 2 state evolution for five rho, on the CPU: results/demo/se_softmax.{csv,json,png}.
demo: build
	$(BIN) se --channel softmax --T 2 --rho 0.1,0.2,0.5,1,2 --alpha 0.001:0.25:128 \
		--out results/demo/se_softmax.csv --plot results/demo/se_softmax.png

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin results
