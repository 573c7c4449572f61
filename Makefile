# rdmasuite — see README.md. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
BIN_DIR ?= $(CURDIR)/bin
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X github.com/rdmasuite/rdmasuite/workloads/probeout.Version=$(VERSION) -X github.com/rdmasuite/rdmasuite/workloads/probeout.Commit=$(COMMIT)
BED_DIR ?= /var/lib/rdmasuite-bed
export BED_DIR

# Images (README "Images"): `make images` builds both as docker-archive
# tarballs without Docker (hack/tools/mkimage); the bed loads exactly these.
IMAGE_REPO ?= docker.io/rdmasuite
IMAGE_TAG ?= $(VERSION)
IMAGES_DIR ?= $(BIN_DIR)/images
IMAGE_BUILD_DIR = $(abspath $(BIN_DIR))/image-build
PROBE_IMAGE = $(IMAGE_REPO)/rdmaprobe:$(IMAGE_TAG)
RUNNER_IMAGE = $(IMAGE_REPO)/rdmasuite-runner:$(IMAGE_TAG)
RUNNER_USER = 65532:65532
# The CA bundle for the CLI's HTTPS clients (rdmasuite push to a Pushgateway).
CA_BUNDLE = $(wildcard /etc/ssl/certs/ca-certificates.crt)
# `make push-images REGISTRY=registry.example.com/team [PUSH_FLAGS=-insecure]`
REGISTRY ?=
PUSH_FLAGS ?=
# The Dockerfiles' GO_VERSION default is this too (hack/tools/mkimage/dockerfiles_test.go).
GO_VERSION := $(shell awk '/^go /{print $$2}' go.mod)

.PHONY: all build rdmaprobe rdmasuite runner-bins images push-images images-docker images-docker-nccl \
	lint unit test e2e demo faults bed-up bed-down bed-status deps verbs-test bench-verbs bench-loop-shapes gpu-check-bundle

all: build

deps:
	hack/install-deps.sh

build: rdmaprobe rdmasuite

rdmaprobe:
	@mkdir -p $(BIN_DIR)
	CGO_ENABLED=1 go build -ldflags '$(LDFLAGS)' -o $(BIN_DIR)/rdmaprobe ./cmd/rdmaprobe

# The probe and its libibverbs closure (not libc) for hack/gpu-device-check.sh
# on a GPU machine without Go or rdma-core: carry hack/.gpu-check there.
gpu-check-bundle:
	@rm -rf hack/.gpu-check && mkdir -p hack/.gpu-check/lib
	$(MAKE) -s rdmaprobe BIN_DIR=$(CURDIR)/hack/.gpu-check/bin
	ldd hack/.gpu-check/bin/rdmaprobe | awk '$$3 ~ /^\// && $$1 !~ /^(libc|libm|libpthread|libdl|librt|ld-linux)/ {print $$3}' | \
		xargs -r cp -L -t hack/.gpu-check/lib
	@ls hack/.gpu-check/lib

rdmasuite:
	@mkdir -p $(BIN_DIR)
	CGO_ENABLED=0 go build -ldflags '$(LDFLAGS)' -o $(BIN_DIR)/rdmasuite ./cmd/rdmasuite

# The runner image's binaries, static: the rdmasuite CLI and the compiled
# suite (go test -c ./suites), which needs no source tree at run time.
runner-bins:
	@mkdir -p $(BIN_DIR)
	CGO_ENABLED=0 go build -ldflags '$(LDFLAGS) -s -w' -o $(BIN_DIR)/rdmasuite ./cmd/rdmasuite
	CGO_ENABLED=0 go test -c -ldflags '$(LDFLAGS) -s -w' -o $(BIN_DIR)/rdmasuite-suite ./suites

# $(IMAGES_DIR)/rdmaprobe.tar ($(PROBE_IMAGE)): rdmaprobe and the libraries
# hack/image-files.sh finds; $(IMAGES_DIR)/rdmasuite-runner.tar
# ($(RUNNER_IMAGE)): the suite as entrypoint, the CLI, uid 65532, /work.
images:
	@mkdir -p $(IMAGES_DIR) $(IMAGE_BUILD_DIR)
	cd hack && go build -o $(IMAGE_BUILD_DIR)/mkimage ./tools/mkimage
	$(MAKE) -s --no-print-directory rdmaprobe runner-bins BIN_DIR=$(IMAGE_BUILD_DIR)
	files=$$(hack/image-files.sh $(IMAGE_BUILD_DIR)/rdmaprobe) && \
	  $(IMAGE_BUILD_DIR)/mkimage -tag $(PROBE_IMAGE) -o $(IMAGES_DIR)/rdmaprobe.tar \
	    -entrypoint /usr/local/bin/rdmaprobe $$files
	$(IMAGE_BUILD_DIR)/mkimage -tag $(RUNNER_IMAGE) -o $(IMAGES_DIR)/rdmasuite-runner.tar \
	  -entrypoint /usr/local/bin/rdmasuite-suite -user $(RUNNER_USER) -workdir /work -env HOME=/work \
	  $(IMAGE_BUILD_DIR)/rdmasuite-suite=/usr/local/bin/rdmasuite-suite $(IMAGE_BUILD_DIR)/rdmasuite=/usr/local/bin/rdmasuite \
	  images/rdmasuite-runner/passwd=/etc/passwd images/rdmasuite-runner/group=/etc/group \
	  $(patsubst %,%=/etc/ssl/certs/ca-certificates.crt,$(CA_BUNDLE))
	@echo "images: $(IMAGES_DIR)/rdmaprobe.tar = $(PROBE_IMAGE), $(IMAGES_DIR)/rdmasuite-runner.tar = $(RUNNER_IMAGE)"

# Pushes both to $(REGISTRY)/rdmaprobe:$(IMAGE_TAG) and
# $(REGISTRY)/rdmasuite-runner:$(IMAGE_TAG), with the Docker config's
# credentials (docker login / its credential helpers), no Docker engine.
push-images:
	@if [[ -z "$(REGISTRY)" ]]; then echo "push-images: no REGISTRY given: make push-images REGISTRY=registry.example.com/team pushes REGISTRY/rdmasuite-runner:$(IMAGE_TAG) and REGISTRY/rdmaprobe:$(IMAGE_TAG)" >&2; exit 2; fi
	@$(MAKE) --no-print-directory images
	$(IMAGE_BUILD_DIR)/mkimage push -registry '$(REGISTRY)' $(PUSH_FLAGS) $(IMAGES_DIR)/rdmasuite-runner.tar $(IMAGES_DIR)/rdmaprobe.tar

# The same images with a Docker engine (optional; images/*/Dockerfile).
images-docker:
	docker build -f images/rdmaprobe/Dockerfile --build-arg GO_VERSION=$(GO_VERSION) --build-arg VERSION=$(VERSION) -t $(PROBE_IMAGE) .
	docker build -f images/rdmasuite-runner/Dockerfile --build-arg GO_VERSION=$(GO_VERSION) --build-arg VERSION=$(VERSION) -t $(RUNNER_IMAGE) .

# The probe on an NCCL base for suite=gpu (BASE: images/rdmaprobe-nccl/Dockerfile).
images-docker-nccl:
	docker build -f images/rdmaprobe-nccl/Dockerfile --build-arg GO_VERSION=$(GO_VERSION) --build-arg VERSION=$(VERSION) -t $(IMAGE_REPO)/rdmaprobe-nccl:$(IMAGE_TAG) .

# Only the packages that link libibverbs need cgo; everything else is
# vetted, tested and built with CGO_ENABLED=0, as the runner image ships it.
# One cgo setting for the pure packages is one compile of client-go and the
# rest on a cold cache, which keeps a cold make test in its budget: with cgo
# on, net and everything above it compile a second time (the vet, unit and
# suite builds did, beside the images' CGO_ENABLED=0 build). A new cgo
# package fails the pure builds loudly until it is listed here.
CGO_PKGS = workloads/verbs workloads/bwverbs cmd/rdmaprobe
# grep -v arguments that drop them from `go list ./...`.
NOT_CGO_PKGS = $(foreach p,$(CGO_PKGS),-e '/$(p)$$')

lint:
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go') 2>&1); if [[ -n $$out ]]; then echo "gofmt needed: $$out"; exit 1; fi
	CGO_ENABLED=0 go vet $$(go list ./... | grep -v $(NOT_CGO_PKGS))
	CGO_ENABLED=1 go vet $(addprefix ./,$(CGO_PKGS))
	cd hack && CGO_ENABLED=0 go vet ./...
	@echo "runner builds without cgo:" && CGO_ENABLED=0 go build ./internal/... ./suites/... ./reports/... ./thresholds/... ./cmd/rdmasuite

# Unit tests: everything but the suites package, which needs a cluster.
# VET=off skips go test's own vet pass (make test runs the whole of go vet
# in lint just before).
VET ?=
VET_FLAG = $(if $(VET),-vet=$(VET))
unit:
	CGO_ENABLED=0 go test -count=1 $(VET_FLAG) $$(go list ./... | grep -v -e '/suites$$' $(NOT_CGO_PKGS))
	CGO_ENABLED=1 go test -count=1 $(VET_FLAG) $(addprefix ./,$(CGO_PKGS))
	cd hack && CGO_ENABLED=0 go test -count=1 $(VET_FLAG) ./...

# The smoke features against the running bed.
e2e:
	CGO_ENABLED=0 go test -count=1 -v ./suites -args --kubeconfig=$(BED_DIR)/kubeconfig --labels suite=smoke

# Verbs tests on a real verbs device (Soft-RoCE in a qemu guest).
verbs-test:
	hack/verbs-test.sh

# Our bandwidth core against perftest on the same rxe devices: ratio table.
bench-verbs:
	hack/bench-verbs.sh

# READ latency's loop shapes compared block by block in one guest process.
bench-loop-shapes:
	hack/bench-loop-shapes.sh

bed-up:
	hack/bed.sh up

bed-down:
	hack/bed.sh down

bed-status:
	hack/bed.sh status

# Everything, on a fresh machine: deps, lint, unit tests, bed up, suite, bed down.
test:
	hack/test.sh

# The main job: bed up, suite, bed down.
demo:
	hack/demo.sh

# Faults in the middle of a run on the bed (a pod deleted, a drain, the API
# server restarted, the runner's network blocked, SIGKILL): hack/README.md.
faults:
	hack/fault-test.sh
