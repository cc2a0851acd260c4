//go:build integration

// Package integration holds end-to-end tests against real engines, a real
// sandbox image and the built binary. Run with
//
//	go test -tags "integration <podman tags>" ./integration/...
//
// MCP_TEST_ENGINES lists the engines that must be tested (default
// "docker,podman"); each must be reachable or the tests fail.
// MCP_BRIDGE_IMAGE names the sandbox image, as for users.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/docker"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/kube"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/podman"
)

// A testEngine is a connected backend under test.
type testEngine interface {
	engine.Engine
	Name() string
	List(context.Context) ([]engine.SandboxInfo, error)
	Close() error
}

var (
	enginesOnce sync.Once
	engines     map[string]testEngine
	enginesErr  error
)

func engineNames() []string {
	v := os.Getenv("MCP_TEST_ENGINES")
	if v == "" {
		v = "docker,podman"
	}
	var names []string
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// connect returns the backend called name, connecting it once per run.
func connect(t testing.TB, name string) testEngine {
	t.Helper()
	enginesOnce.Do(func() {
		engines = map[string]testEngine{}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var errs []error
		for _, n := range engineNames() {
			e, err := openEngine(ctx, n, "")
			if err != nil {
				errs = append(errs, err)
				continue
			}
			engines[n] = e
		}
		enginesErr = errors.Join(errs...)
	})
	e, ok := engines[name]
	if !ok && name == engine.BackendKubernetes {
		// Not a member of MCP_TEST_ENGINES (the tests over every engine
		// are Docker's and Podman's): opened on first use.
		return kubeEngine(t)
	}
	if !ok {
		t.Fatalf("engine %s is required (MCP_TEST_ENGINES) but unavailable: %v", name, enginesErr)
	}
	return e
}

var (
	kubeOnce sync.Once
	kubeEng  testEngine
	kubeErr  error
)

// kubeEngine returns the Kubernetes engine, connecting it once per run.
func kubeEngine(t testing.TB) testEngine {
	t.Helper()
	kubeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		kubeEng, kubeErr = openEngine(ctx, engine.BackendKubernetes, "")
	})
	if kubeErr != nil {
		t.Fatalf("the Kubernetes engine is unavailable: %v", kubeErr)
	}
	return kubeEng
}

// openEngine connects the backend called name, at addr when it is set
// (else the usual socket); each call is a new connection, as a new bridge
// process makes.
func openEngine(ctx context.Context, name, addr string) (testEngine, error) {
	switch name {
	case "docker":
		return docker.New(ctx, &docker.Options{Host: addr, Logger: testLogger()})
	case "podman":
		return podman.New(ctx, &podman.Options{URI: addr, Logger: testLogger()})
	case engine.BackendKubernetes:
		return kube.New(ctx, &engine.KubernetesOptions{Namespace: os.Getenv("MCP_BRIDGE_K8S_NAMESPACE"), Logger: testLogger()})
	}
	return nil, errors.New("unknown engine " + name)
}

// settings returns the operator settings from the environment.
func settings(t testing.TB) *config.Config {
	t.Helper()
	c, err := config.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pySpec returns a spec that runs a Python program read from stdin.
func pySpec(t *testing.T, session string) engine.Spec {
	return settings(t).SandboxSpec(session, []string{"python3", "-u", "-"})
}

// A result is what a sandbox printed and how it ended.
type result struct {
	stdout, stderr string
	status         engine.ExitStatus
}

// runPy runs code in a sandbox made from spec and returns its output.
func runPy(t *testing.T, e testEngine, spec engine.Spec, code string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() {
		if err := sb.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	var out, errb bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); io.Copy(&out, sb.Stdout()) }()
	go func() { defer wg.Done(); io.Copy(&errb, sb.Stderr()) }()
	if _, err := io.WriteString(sb.Stdin(), code); err != nil {
		t.Fatalf("writing code: %v", err)
	}
	if err := sb.Stdin().Close(); err != nil {
		t.Fatalf("closing stdin: %v", err)
	}
	st, err := sb.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	wg.Wait()
	return result{out.String(), errb.String(), st}
}

// runJSON runs code that prints one JSON object and decodes it into v.
func runJSON(t *testing.T, e testEngine, spec engine.Spec, code string, v any) result {
	t.Helper()
	r := runPy(t, e, spec, code)
	if r.status.Code != 0 {
		t.Fatalf("probe exited %v\nstdout: %s\nstderr: %s", r.status, r.stdout, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("decoding probe output: %v\nstdout: %s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return r
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// binary builds the command once, with the same tags as the tests.
func binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcp-bridge-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "mcp-server-code-execution-mode")
		cmd := exec.Command("go", "build", "-tags", engine.PodmanBuildTags, "-o", binPath, "../cmd/mcp-server-code-execution-mode")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = errors.New("building the binary: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// envWithout returns the process environment less the named variables.
func envWithout(names ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	return out
}
