# detgemm — build, test and GPU workflow. Every target builds with CGO_ENABLED=0:
# the CUDA driver and NVRTC are loaded at run time through purego.
export CGO_ENABLED := 0
GO ?= go
PKGS := ./...
# Packages whose tests get a binary for the GPU machine (see gpu-bin).
GPU_TEST_PKGS := $(shell $(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... 2>/dev/null)
# bench/ is a module of its own (bench/go.mod), so the tools' dependencies
# (gonum's plot) stay out of the library's go.mod; ./... above does not reach it.
BENCH_TEST_PKGS := $(shell cd bench && $(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... 2>/dev/null)
MODULE := github.com/detgemm/detgemm
# The source revision the bench records in its JSON (binaries built here carry no VCS stamp).
COMMIT := $(shell git describe --always --dirty --abbrev=12 2>/dev/null)
BENCH_LDFLAGS := -X main.buildCommit=$(COMMIT)
# The GPU machine is a Hopper (H100/H200): its binaries embed only the sm_90a
# CUBINs, which keeps the travelling tree under its 64 MiB cap
# (GPU_TAGS=detgemm_only_sm90a,detgemm_only_sm90a13: the cuda13 variant only,
# about 9 MB less a binary, for carrying two of them at once).
GPU_TAGS ?= detgemm_only_sm90a

.PHONY: all build test vet fmt-check fuzz cross gpu-bin bench demo clean

all: build

build:
	$(GO) build $(PKGS)

## test: formatting, vet, every test of the library and of the bench module (GPU tests
## skip with a reason where no GPU is found), then each fuzz target briefly.
test: fmt-check vet
	$(GO) test -count=1 -timeout 45m $(PKGS)
	cd bench && $(GO) test -count=1 -timeout 45m ./...
	cd bench && $(GO) test -count=1 -tags noplot -run 'NoPlot|From' .
	$(MAKE) --no-print-directory fuzz

# Every public entry that takes shapes, sizes or bytes has a fuzz target;
# `make fuzz FUZZTIME=2000000x` searches longer. Go fuzzes one target a run.
# The budget is a count of inputs, not a duration: with a duration, Go 1.26's
# fuzz coordinator can fail a target with "context deadline exceeded" at the
# deadline, having found nothing (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?= 20000x
FUZZ_TARGETS := ./gemm:FuzzCall ./gemm:FuzzMatmulPlan ./gemm:FuzzGated ./gemm:FuzzSparse24Engine ./gemm:FuzzSparse24Forward ./gemm/ref:FuzzRef ./gemm/ref:FuzzMatmul ./gemm/ref:FuzzFP8Matmul ./gemm:FuzzFP8Matmul ./gemm:FuzzQuantizeFP8 \
	./gemm/ref:FuzzSparse24Format ./cudaload:FuzzArgs \
	./cudaload:FuzzLaunchConfigValidate ./cudaload:FuzzEncodeTiled ./triad:FuzzTriadCPU
## fuzz: run each fuzz target for FUZZTIME (the bench's in its own module).
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t%%:*} $${t#*:} ($(FUZZTIME))"; \
		$(GO) test $${t%%:*} -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 500x -parallel 1 > /tmp/detgemm-fuzz.log 2>&1 || { cat /tmp/detgemm-fuzz.log; exit 1; }; \
	done
	cd bench && $(GO) test . -run '^$$' -fuzz '^FuzzParseReport$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 500x -parallel 1 > /tmp/detgemm-fuzz.log 2>&1 || { cat /tmp/detgemm-fuzz.log; exit 1; }

vet:
	$(GO) vet $(PKGS)
	cd bench && $(GO) vet ./... && $(GO) vet -tags noplot ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## cross: the module and the bench cross-compile with CGO_ENABLED=0 for every target (darwin builds; CUDA is not there, the loaders say so).
cross:
	GOOS=linux GOARCH=amd64 $(GO) build $(PKGS)
	GOOS=linux GOARCH=arm64 $(GO) build $(PKGS)
	GOOS=windows GOARCH=amd64 $(GO) build $(PKGS)
	GOOS=darwin GOARCH=arm64 $(GO) build $(PKGS)
	cd bench && for t in linux/amd64 linux/arm64 windows/amd64 darwin/arm64; do \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build ./... || exit 1; done

## gpu-bin: test binaries and the bench for the GPU machine (no Go there), in .gpu/ with run.sh.
gpu-bin:
	@rm -rf .gpu && mkdir -p .gpu
	@set -e; for p in $(GPU_TEST_PKGS) $(BENCH_TEST_PKGS); do \
		rel=$${p#$(MODULE)}; rel=$${rel#/}; name=$$(echo "$$rel" | tr '/' '_'); \
		case "$$rel" in bench|bench/*) dir=bench; pkg=.$${rel#bench}; tags=noplot,$(GPU_TAGS) ;; *) dir=.; pkg=./$$rel; tags=$(GPU_TAGS) ;; esac; \
		echo "go test -c $$rel -> .gpu/$$name.test"; \
		(cd $$dir && GOOS=linux GOARCH=amd64 $(GO) test -c -trimpath -tags="$$tags" -ldflags="-s -w" -o $(CURDIR)/.gpu/$$name.test $$pkg); \
		echo "$$rel $$name" >> .gpu/packages.txt; \
	done
	@# The bench's plot (gonum and its fonts) stays here: -tags noplot; draw the JSON that comes back.
	cd bench && GOOS=linux GOARCH=amd64 $(GO) build -trimpath -tags=noplot,$(GPU_TAGS) -ldflags="-s -w $(BENCH_LDFLAGS)" -o $(CURDIR)/.gpu/bench .
	GOOS=linux GOARCH=amd64 $(GO) build -trimpath -tags=$(GPU_TAGS) -ldflags="-s -w" -o .gpu/train ./triad/cmd/train
	GOOS=linux GOARCH=amd64 $(GO) build -trimpath -tags=$(GPU_TAGS) -ldflags="-s -w" -o .gpu/coldstart ./kernels/internal/coldstart
	@# The tree that travels to the GPU machine is capped at 64 MiB: ship the binaries xz-compressed
	@# in one stream with a 256 MiB window (one thread: blocks of a threaded xz would not see each other),
	@# so the embedded CUBINs that every binary holds are stored about once.
	cd .gpu && tar cf - $$(ls | grep -v -e '^packages.txt$$') | xz -T1 --lzma2=preset=6,dict=256MiB > bin.txz && rm -f $$(ls | grep -v -e '^packages.txt$$' -e '^bin.txz$$')
	cp scripts/gpu-run.sh .gpu/run.sh && chmod +x .gpu/run.sh
	@du -sh .gpu

## bench: the measuring stick (needs a GPU); figures in bench-results.json. BENCH_ARGS=... adds flags.
bench:
	cd bench && $(GO) run -ldflags="$(BENCH_LDFLAGS)" . --json $(CURDIR)/bench-results.json $(BENCH_ARGS)

## demo: the main job — train a small MLP deterministically (GPU, or the CPU backend without one).
demo:
	$(GO) run ./triad/cmd/train

clean:
	rm -rf .gpu bench-results.json

## generate: rebuild the embedded CUBINs (kernels/embedded, kernels/zembedded.go) with the local NVRTC
## (Debian's libnvrtc12 or newer; see .ci/run's install_nvrtc). Run after editing kernels/cuda or kernels/flags.go.
.PHONY: generate
generate:
	$(GO) generate ./kernels

## readme-bench: the README's performance tables, rendered from a saved bench run (never copied by hand):
##   make readme-bench BENCH_JSON=docs/bench/RUN.json
.PHONY: readme-bench
readme-bench:
	@test -n "$(BENCH_JSON)" || { echo "usage: make readme-bench BENCH_JSON=docs/bench/RUN.json"; exit 2; }
	$(GO) run ./bench --from $(BENCH_JSON) --format md --quiet > .bench-tables.md
	awk 'FNR==NR { t = t $$0 "\n"; next } \
		/<!-- BEGIN bench tables -->/ { print; printf "%s", t; skip = 1; next } \
		/<!-- END bench tables -->/ { skip = 0 } !skip' .bench-tables.md README.md > README.md.new
	mv README.md.new README.md && rm -f .bench-tables.md

## sass: a kernel's loops read off an embedded CUBIN (kernels/internal/sassloops: instructions,
## ptxas' stall cycles, opcodes), with cuobjdump unpacked into .tools/ from Debian trixie's
## non-free nvidia-cuda-toolkit (the apt source .ci/run adds; nothing is installed):
##   make sass FAMILY=gemm_wgmma_matmul KERNEL='wgmm128x256_gelu_nn_bf16' [VARIANT=cuda13] [SASS_ARGS=-list]
CUOBJDUMP := .tools/usr/bin/cuobjdump
VARIANT ?= base
.PHONY: sass
sass: $(CUOBJDUMP)
	@test -n "$(FAMILY)" || { echo "usage: make sass FAMILY=gemm_wgmma_matmul KERNEL=REGEXP [VARIANT=cuda13] [SASS_ARGS=...]"; exit 2; }
	$(GO) run ./kernels/internal/sassloops -cuobjdump $(CUOBJDUMP) -variant $(VARIANT) -family $(FAMILY) -kernel '$(or $(KERNEL),.)' $(SASS_ARGS)

$(CUOBJDUMP):
	mkdir -p .tools
	cd .tools && apt-get download nvidia-cuda-toolkit && dpkg -x nvidia-cuda-toolkit_*.deb . && rm -f nvidia-cuda-toolkit_*.deb
