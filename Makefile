# mmk's build. `make test` is what CI runs (.ci/run).
GO ?= go
STATICCHECK_VERSION ?= v0.8.2

# go-nvml loads libnvidia-ml at run time through cgo's dlopen, so cgo is on.
# Its generated cgo prologue warns about NVML functions that CUDA 13
# deprecated; mmk calls none of them.
export CGO_ENABLED := 1
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: all build tools test bench lint fuzz results run clean

all: build

## build: bin/mmkd and bin/mmkctl
build:
	$(GO) build -o bin/ ./cmd/mmkd ./cmd/mmkctl

## tools: developer programs under bench/ (bin/nvmlprobe: read-only NVML facts of GPU 0)
tools:
	$(GO) build -o bin/ ./bench/nvmlprobe

## test: go vet and every test with the race detector
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

## bench: every benchmark, with allocations
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## lint: gofmt, go vet and staticcheck
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

## fuzz: run each fuzz test (parsers and file readers) for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseLayout -fuzztime $(FUZZTIME) ./partitioner
	$(GO) test -run '^$$' -fuzz FuzzReadProfiles -fuzztime $(FUZZTIME) ./kernelsched
	$(GO) test -run '^$$' -fuzz FuzzReadKernelTrace -fuzztime $(FUZZTIME) ./trace
	$(GO) test -run '^$$' -fuzz FuzzParseTaskSpec -fuzztime $(FUZZTIME) ./trace
	$(GO) test -run '^$$' -fuzz FuzzReadSamples -fuzztime $(FUZZTIME) ./predictor

## results: regenerate docs/results (simulations; a few minutes)
results:
	$(GO) run ./bench/kernelsched -o docs/results/kernelsched.md

## run: build and start mmkd on the embedded defaults (fake GPUs when no driver is installed)
run: build
	bin/mmkd

clean:
	rm -rf bin
