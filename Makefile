# mmk's build. `make test` is what CI runs (.ci/run).
GO ?= go
STATICCHECK_VERSION ?= v0.8.2

# go-nvml loads libnvidia-ml at run time through cgo's dlopen, so cgo is on.
# Its generated cgo prologue warns about NVML functions that CUDA 13
# deprecated; mmk calls none of them.
export CGO_ENABLED := 1
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: all help build hook hook-fakes tools test test-kube bench lint fuzz deb image screenshots results results-kernelsched results-predictor results-partition results-simcheck restart-costs kernel-effects run clean

all: build

# VERSION is what mmkd --version and mmkctl --version print and the .deb's
# version (packaging/version.sh: the tag, else 0.0~gitDATE.HASH).
VERSION ?= $(shell packaging/version.sh)
LDFLAGS = -X github.com/mmkgpu/mmk/cmd/internal/buildinfo.version=$(VERSION)

## help: this list: every target with a `## name: text` comment above it
help:
	@awk '/^## [A-Za-z0-9_-]+: / { sub(/^## /, ""); i = index($$0, ": "); printf "  %-20s %s\n", substr($$0, 1, i - 1), substr($$0, i + 2) }' $(firstword $(MAKEFILE_LIST))

## build: bin/mmkd, bin/mmkctl, bin/mmk-dra and the hook
build: hook
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/mmkd ./cmd/mmkctl ./cmd/mmk-dra

## deb: bin/mmk_VERSION_ARCH.deb (dpkg-deb): mmkd, mmkctl, mmk-dra, the hook, mmkd.service, /etc/mmk/mmk.yaml, mmkctl's shell completion
deb: build
	packaging/build-deb.sh "$(VERSION)" bin

## image: bin/mmk-dra-image.tar and bin/mmkd-image.tar, OCI image archives (IMAGE_REPO/mmk-dra:IMAGE_TAG, default mmk/mmk-dra:dev, the DaemonSet's) of static binaries on an empty base, built offline and checked; load with ctr -n k8s.io images import FILE or docker load -i FILE
# mmk-dra builds without cgo; mmkd needs it (go-nvml's dlopen) and links
# statically, with Go's own user and DNS lookups (osusergo, netgo): an
# empty base has no libc. Building mmk-dra without cgo compiles the
# Kubernetes libraries once more (about 2 CPU-minutes the first time).
IMAGE_REPO ?= mmk
IMAGE_TAG ?= dev
image:
	@mkdir -p bin/static
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS) -s -w" -o bin/static/ ./cmd/mmk-dra
	$(GO) build -trimpath -tags osusergo,netgo -ldflags "$(LDFLAGS) -s -w -linkmode external -extldflags -static" -o bin/static/ ./cmd/mmkd
	$(GO) run ./packaging/oci --name $(IMAGE_REPO)/mmk-dra --tag $(IMAGE_TAG) --version "$(VERSION)" --file bin/static/mmk-dra:/usr/bin/mmk-dra --entrypoint /usr/bin/mmk-dra --out bin/mmk-dra-image.tar
	$(GO) run ./packaging/oci --name $(IMAGE_REPO)/mmkd --tag $(IMAGE_TAG) --version "$(VERSION)" --file bin/static/mmkd:/usr/bin/mmkd --entrypoint /usr/bin/mmkd --out bin/mmkd-image.tar
	MMK_IMAGE_DIR=$(abspath bin) MMK_IMAGE_VERSION="$(VERSION)" $(GO) test -count=1 -run TestBuiltImages -v ./packaging/oci

## hook: bin/libmmkhook.so, the C library injected into jobs (CUDA_INJECTION64_PATH), and bin/mmk-tpcprobe, the probe mmkd maps a GPU's TPC mask slots with
CC ?= cc
HOOK_CFLAGS ?= -O2 -g -fPIC -fvisibility=hidden -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror
HOOK_SRCS = $(filter-out hook/lib/layout_check.c,$(wildcard hook/lib/*.c))
hook: bin/libmmkhook.so bin/mmk-tpcprobe
bin/libmmkhook.so: $(wildcard hook/lib/*.c hook/lib/*.h)
	@mkdir -p bin
	$(CC) $(HOOK_CFLAGS) -shared -o $@ $(HOOK_SRCS) -ldl -lpthread
bin/mmk-tpcprobe: hook/tpcprobe/tpcprobe.c
	@mkdir -p bin
	$(CC) $(filter-out -fPIC -fvisibility=hidden,$(HOOK_CFLAGS)) -o $@ $< -ldl

## hook-fakes: the hook, the fake CUPTI/GPU, the replay job and the fake CUPTI's stress test for CI, in FAKE_DIR (kernelsched/server's tests call it)
FAKE_DIR ?= bin/fake
hook-fakes:
	@mkdir -p $(FAKE_DIR)
	$(CC) $(HOOK_CFLAGS) -shared -o $(FAKE_DIR)/libmmkhook.so $(HOOK_SRCS) -ldl -lpthread
	$(CC) $(HOOK_CFLAGS) -shared -o $(FAKE_DIR)/libfakecupti.so hook/fake/fakecupti.c
	$(CC) $(filter-out -fPIC -fvisibility=hidden,$(HOOK_CFLAGS)) -o $(FAKE_DIR)/replay hook/fake/replay.c -ldl
	$(CC) $(filter-out -fPIC -fvisibility=hidden,$(HOOK_CFLAGS)) -o $(FAKE_DIR)/cupti_stress hook/fake/cupti_stress.c -ldl -lpthread

## tools: developer programs under bench/ (bin/nvmlprobe: read-only NVML facts of GPU 0; bin/pareto: the co-location report)
tools:
	$(GO) build -o bin/ ./bench/nvmlprobe ./bench/pareto

## test: go vet, every test with the race detector, and the API load test without it (it measures mmkd, not the detector)
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run TestStreamsDoNotSlowSubmits ./bench/apiload

## test-kube: the DRA driver's flow against a real kube-apiserver and etcd, built once from their Go modules into KUBE_BIN (about 10 CPU-minutes and 2.3 GB the first time; docs/kubernetes.md)
KUBE_BIN ?= bin/kube
test-kube:
	@if [ ! -x $(KUBE_BIN)/kube-apiserver ] || [ ! -x $(KUBE_BIN)/etcd ]; then deployments/kubernetes/test/build-apiserver.sh $(KUBE_BIN); fi
	MMK_KUBE_APISERVER=$(abspath $(KUBE_BIN))/kube-apiserver MMK_ETCD=$(abspath $(KUBE_BIN))/etcd $(GO) test -race -count=1 -run TestClaimsRealAPIServer -v ./dra/

## bench: every benchmark, with allocations
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## lint: gofmt, go vet and staticcheck
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

## fuzz: run each fuzz test (parsers, file readers and the job API) for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseLayout -fuzztime $(FUZZTIME) ./partitioner
	$(GO) test -run '^$$' -fuzz FuzzParseParted -fuzztime $(FUZZTIME) ./partitioner
	$(GO) test -run '^$$' -fuzz FuzzReadProfiles -fuzztime $(FUZZTIME) ./kernelsched
	$(GO) test -run '^$$' -fuzz FuzzReadKernelTrace -fuzztime $(FUZZTIME) ./trace
	$(GO) test -run '^$$' -fuzz FuzzParseTaskSpec -fuzztime $(FUZZTIME) ./sim
	$(GO) test -run '^$$' -fuzz FuzzReadSamples -fuzztime $(FUZZTIME) ./predictor
	$(GO) test -run '^$$' -fuzz FuzzParseRunKey -fuzztime $(FUZZTIME) ./predictor
	$(GO) test -run '^$$' -fuzz FuzzReadOpenB -fuzztime $(FUZZTIME) ./trace
	$(GO) test -run '^$$' -fuzz FuzzReadCheckpointLines -fuzztime $(FUZZTIME) ./sim/jobsim
	$(GO) test -run '^$$' -fuzz FuzzSubmit -fuzztime $(FUZZTIME) ./web
	$(GO) test -run '^$$' -fuzz FuzzListQuery -fuzztime $(FUZZTIME) ./web
	$(GO) test -run '^$$' -fuzz FuzzPrepareClaim -fuzztime $(FUZZTIME) ./web
	$(GO) test -run '^$$' -fuzz FuzzParseConfig -fuzztime $(FUZZTIME) ./dra
	$(GO) test -run '^$$' -fuzz FuzzRecords -fuzztime $(FUZZTIME) ./jobs
	$(GO) test -run '^$$' -fuzz FuzzSpec -fuzztime $(FUZZTIME) ./jobs
	$(GO) test -run '^$$' -fuzz FuzzDecodeRecord -fuzztime $(FUZZTIME) ./jobs
	$(GO) test -run '^$$' -fuzz FuzzStrictAsDecoder -fuzztime $(FUZZTIME) ./jobs
	$(GO) test -run '^$$' -fuzz FuzzAsEncodingJSON -fuzztime $(FUZZTIME) ./internal/jsonread
	$(GO) test -run '^$$' -fuzz FuzzParseMiB -fuzztime $(FUZZTIME) ./jobs
	$(GO) test -run '^$$' -fuzz FuzzParseCommand -fuzztime $(FUZZTIME) ./kernelsched/server
	$(GO) test -run '^$$' -fuzz FuzzParseHello -fuzztime $(FUZZTIME) ./kernelsched/server
	$(GO) test -run '^$$' -fuzz FuzzTaskMessages -fuzztime $(FUZZTIME) ./kernelsched/server
	$(GO) test -run '^$$' -fuzz FuzzHandshake -fuzztime $(FUZZTIME) ./hook/handshake
	$(GO) test -run '^$$' -fuzz FuzzReadWindows -fuzztime $(FUZZTIME) ./bench/pareto
	$(GO) test -run '^$$' -fuzz FuzzReadCalibration -fuzztime $(FUZZTIME) ./sim/slosuite
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./slo
	$(GO) test -run '^$$' -fuzz FuzzParseRung -fuzztime $(FUZZTIME) ./slo

## screenshots: docs/img/*.png, the dashboard on the fake GPUs in headless Chromium (needs chromium): the overview, GPU cards (memory bars, health), waiting jobs, jobs, a job, kernel schedulers (on, through the fake hook), plan
screenshots: build hook-fakes
	$(GO) run ./bench/screenshots -mmkd bin/mmkd -fakes $(FAKE_DIR) -o docs/img

## results: regenerate docs/results (simulations and the predictor's comparison; a few minutes)
PROFILES ?= data/profiles/h200-2026-11-22.csv
PROFILES_H100 ?= data/profiles/h100-2026-11-25.csv
SIMCASE ?= docs/results/simcase-h100-2026-11-25/e2e.jsonl
SLORUNS ?= H200-141GB=docs/results/slo-h200-2026-11-26/round0,H200-141GB=docs/results/slo-h200-2026-11-26/round1,H100-80GB=docs/results/slo-h100-2026-11-26/round0,H100-80GB=docs/results/slo-h100-2026-11-26/rounds
results: results-kernelsched results-predictor results-partition results-simcheck
## results-partition: the job-level policies on testbed and large (seeds 1-5: ablation, load sweep, MIG change cost), openb (needs ../shared/cluster-traces), and the map of which policy wins over latency targets and load; about 35 minutes on 2 cores (`go run ./bench/partition -map=false`: a few, without the map)
results-partition:
	$(GO) run ./bench/partition -o docs/results/partition.md
## results-simcheck: the job simulator's ground truth against mmkd's H100 end-to-end rounds (the same jobs, measured) and the H100 campaign's co-located runs, and its replay of a JOBSET=sim run (SIMCASE: that run's e2e.jsonl; "" leaves the replay out); and services against services: the SLO benchmark's services together without trainers (SLORUNS: GPU=DIR,...)
results-simcheck:
	$(GO) run ./bench/simcheck -campaign $(PROFILES_H100) -replay "$(SIMCASE)" -o docs/results/simcheck-h100.md
	$(GO) run ./bench/simcheck -services $(SLORUNS) -o docs/results/simcheck-services.md
## restart-costs: the simulator's checkpoint costs per job type from the H100 lines of bench/gpu/ckpt_cost.py
restart-costs:
	$(GO) run ./bench/restartcost -in docs/results/restart-cost-h100/ckpt.jsonl -o sim/jobsim/data/restart-cost.json
## kernel-effects: re-measure the kernel scheduler's effect table the job simulator uses
kernel-effects:
	$(GO) run ./bench/kerneleffects -o sim/jobsim/data/kernel-effects.json
results-kernelsched:
	$(GO) run ./bench/kernelsched -o docs/results/kernelsched.md
## results-predictor: the models compared without leakage on the H200 profiles and on the H100 campaign (its noise floor)
results-predictor: build
	{ echo '# Predictor: models compared without leakage, against the noise floor'; echo; echo 'Generated by `make results-predictor` from `$(PROFILES)`: `bin/mmkctl predictor compare --data $(PROFILES)` (configuration-disjoint splits, seeds 1-5; each job type left out once; see docs/predictor.md).'; echo; echo '```'; bin/mmkctl predictor compare -q --data $(PROFILES); echo '```'; \
	  echo; echo 'The same data with the extended features derived (every member at client priority 0, the shares from the runs'"'"' keys) and the extended target (a speed, one direction for online and offline jobs): `bin/mmkctl predictor compare --data $(PROFILES) --features extended`.'; echo; echo '```'; bin/mmkctl predictor compare -q --data $(PROFILES) --features extended; echo '```'; } > docs/results/predictor.md
	{ echo '# Predictor on the H100 campaign: models against the measured noise floor'; echo; echo 'Generated by `make results-predictor` from `$(PROFILES_H100)` (repetitions and MPS client priorities measured; see docs/predictor.md): `bin/mmkctl predictor compare --data $(PROFILES_H100)` (configuration-disjoint splits, seeds 1-5; each job type left out once).'; echo; echo '```'; bin/mmkctl predictor compare -q --data $(PROFILES_H100); echo '```'; } > docs/results/predictor-h100.md

## run: build and start mmkd on the embedded defaults (fake GPUs when no driver is installed), its data (store, jobs' logs, socket, token) in .run/ of the checkout unless MMK_DATA_DIR says elsewhere
MMK_DATA_DIR ?= $(CURDIR)/.run
run: build
	bin/mmkd --data-dir "$(MMK_DATA_DIR)"

clean:
	rm -rf bin
