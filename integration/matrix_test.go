//go:build integration

package integration

import (
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// The matrix: the engines and OCI runtimes a test or benchmark runs on.
// Every test that runs on more than one takes its variants from here, so
// that what "every engine" means is written once.
//
//   - engineVariants: the engines of MCP_TEST_ENGINES (Docker, Podman);
//   - withGVisor: those plus Docker under gVisor when runsc is installed;
//   - kubeVariants: pods under the node's runc and under gVisor;
//   - onEngine: one engine, for a test whose verdict the bridge or the
//     runtime decides, whatever carries the bytes (the conformance suites,
//     the npm servers' and the TypeScript clients' tests, policy, HTTP,
//     progress). Each names its engine, Docker and Podman in turn, so that
//     the suite as a whole covers both; when that engine is not under
//     test, the first one listed runs it. What crosses each engine's
//     stream (floods, signals, limits, files, egress, packages, handles)
//     stays on every engine.

// A variant is one engine and OCI runtime a test runs on.
type variant struct {
	label  string // the subtest's name: docker, podman, docker+runsc, runc, gvisor
	engine string // the bridge's MCP_BRIDGE_RUNTIME
	oci    string // MCP_BRIDGE_OCI_RUNTIME; empty: the engine's default
	class  string // the pods' RuntimeClass on Kubernetes; empty: the node's default
	lane   bool   // MCP_BRIDGE_FAST_LANE=1: the frames travel the fast lane
}

// env returns the bridge environment selecting v (on Kubernetes, its
// RuntimeClass, and no pool: each test's pods are its own).
func (v variant) env() []string {
	if v.engine == engine.BackendKubernetes {
		return []string{"MCP_BRIDGE_K8S_RUNTIME_CLASS=" + v.class, "MCP_BRIDGE_POOL_SIZE=0"}
	}
	env := []string{"MCP_BRIDGE_RUNTIME=" + v.engine, "MCP_BRIDGE_OCI_RUNTIME=" + v.oci}
	if v.lane {
		env = append(env, "MCP_BRIDGE_FAST_LANE=1")
	}
	return env
}

// withLanes returns vs plus each local engine of vs under runc with the
// fast lane (MCP_BENCH_LANE=0 leaves them out).
func withLanes(vs []variant) []variant {
	if os.Getenv("MCP_BENCH_LANE") == "0" {
		return vs
	}
	out := slices.Clip(vs)
	for _, v := range vs {
		if (v.engine == "docker" || v.engine == "podman") && v.oci == "" && !v.lane {
			out = append(out, variant{label: v.engine + "+lane", engine: v.engine, lane: true})
		}
	}
	return out
}

// gvisor reports whether v's sandboxes run under gVisor.
func (v variant) gvisor() bool { return v.oci == "runsc" || v.class == "gvisor" }

// engineVariants lists the engines under test (MCP_TEST_ENGINES).
func engineVariants() []variant {
	var out []variant
	for _, name := range engineNames() {
		out = append(out, variant{label: name, engine: name})
	}
	return out
}

// withGVisor returns vs plus Docker under gVisor when runsc is installed
// and Docker is under test (MCP_BENCH_RUNSC=0 leaves it out).
func withGVisor(vs []variant) []variant {
	if _, err := exec.LookPath("runsc"); err != nil || os.Getenv("MCP_BENCH_RUNSC") == "0" || !slices.Contains(engineNames(), "docker") {
		return vs
	}
	return append(slices.Clip(vs), variant{label: "docker+runsc", engine: "docker", oci: "runsc"})
}

// kubeVariants lists the RuntimeClasses the Kubernetes tests run under:
// the node's default (runc) and gVisor's.
func kubeVariants() []variant {
	return []variant{
		{label: "runc", engine: engine.BackendKubernetes},
		{label: "gvisor", engine: engine.BackendKubernetes, class: "gvisor"},
	}
}

// forEach runs f as a subtest per variant, the subtests in parallel.
func forEach(t *testing.T, vs []variant, f func(t *testing.T, v variant)) {
	for _, v := range vs {
		t.Run(v.label, func(t *testing.T) {
			t.Parallel()
			f(t, v)
		})
	}
}

// forEachEngine runs f as a parallel subtest per engine under test.
func forEachEngine(t *testing.T, f func(t *testing.T, e testEngine)) {
	forEach(t, engineVariants(), func(t *testing.T, v variant) { f(t, connect(t, v.engine)) })
}

// onEngine runs f as one subtest on the engine called name, or on the
// first engine under test when that one is not (the subtest is named
// after the engine that runs it). For tests whose verdict is decided in
// the bridge or the runtime: the bytes they send cross an engine's
// stream, but nothing they check depends on which.
func onEngine(t *testing.T, name string, f func(t *testing.T, e testEngine)) {
	names := engineNames()
	if !slices.Contains(names, name) {
		name = names[0]
	}
	t.Run(name, func(t *testing.T) { f(t, connect(t, name)) })
}

// forEachKubeClass runs f per RuntimeClass, one after the other, with the
// environment that selects it.
func forEachKubeClass(t *testing.T, f func(t *testing.T, e testEngine, env []string, gvisor bool)) {
	kubeRequired(t)
	e := connect(t, engine.BackendKubernetes)
	for _, v := range kubeVariants() {
		t.Run(v.label, func(t *testing.T) { f(t, e, v.env(), v.gvisor()) })
	}
}

// forEachVariant runs f as a sub-benchmark per engine, Docker under
// gVisor included.
func forEachVariant(b *testing.B, f func(b *testing.B, v variant)) {
	for _, v := range withLanes(withGVisor(engineVariants())) {
		b.Run(v.label, func(b *testing.B) { f(b, v) })
	}
}
