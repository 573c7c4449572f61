# rdmasuite — see README.md. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
BIN_DIR ?= $(CURDIR)/bin
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/rdmasuite/rdmasuite/workloads/probeout.Version=$(VERSION)
BED_DIR ?= /var/lib/rdmasuite-bed
export BED_DIR

.PHONY: all build rdmaprobe rdmasuite lint unit test e2e demo bed-up bed-down bed-status deps verbs-test bench-verbs

all: build

deps:
	hack/install-deps.sh

build: rdmaprobe rdmasuite

rdmaprobe:
	@mkdir -p $(BIN_DIR)
	go build -ldflags '$(LDFLAGS)' -o $(BIN_DIR)/rdmaprobe ./cmd/rdmaprobe

rdmasuite:
	@mkdir -p $(BIN_DIR)
	go build -ldflags '$(LDFLAGS)' -o $(BIN_DIR)/rdmasuite ./cmd/rdmasuite

lint:
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go') 2>&1); if [[ -n $$out ]]; then echo "gofmt needed: $$out"; exit 1; fi
	go vet ./...
	cd hack && go vet ./...
	@echo "runner builds without cgo:" && CGO_ENABLED=0 go build ./internal/... ./suites/... ./reports/... ./thresholds/... ./cmd/rdmasuite

# Unit tests: everything but the suites package, which needs a cluster.
unit:
	go test -count=1 $$(go list ./... | grep -v '/suites$$')
	cd hack && go test -count=1 ./...

# The smoke features against the running bed.
e2e:
	go test -count=1 -v ./suites -args --kubeconfig=$(BED_DIR)/kubeconfig --labels suite=smoke

# Verbs tests on a real verbs device (Soft-RoCE in a qemu guest).
verbs-test:
	hack/verbs-test.sh

# Our bandwidth core against perftest on the same rxe devices: ratio table.
bench-verbs:
	hack/bench-verbs.sh

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
