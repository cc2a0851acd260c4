# Build tags that compile the Podman backend in (see README.md, "Build tags"),
# written once, in engine/podman_tags.txt.
PODMAN_TAGS := $(shell cat engine/podman_tags.txt)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: build install provision test unit lint
build:
	go build -tags "$(PODMAN_TAGS)" -ldflags "$(LDFLAGS)" -o bin/mcp-server-code-execution-mode ./cmd/mcp-server-code-execution-mode
install:
	go install -tags "$(PODMAN_TAGS)" -ldflags "$(LDFLAGS)" ./cmd/mcp-server-code-execution-mode
provision:
	bash scripts/provision
test:
	bash scripts/test
unit:
	go test -race ./...
	go test -race -tags "$(PODMAN_TAGS)" ./...
lint:
	go vet ./... && go vet -tags "$(PODMAN_TAGS)" ./...
	bash scripts/staticcheck ./...
	bash scripts/staticcheck -tags "integration $(PODMAN_TAGS)" ./...
