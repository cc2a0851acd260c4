//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// TestKubeDoctor runs `doctor --json` on the cluster, under runc and
// gVisor: the engine answers, and the routes check reads a sandbox pod's
// route tables from inside and finds no route out (the test cluster's
// bridge has no gateway; gVisor pods have no network), then deletes the
// pod. No traffic is sent.
func TestKubeDoctor(t *testing.T) {
	kubeRequired(t)
	for _, kv := range kubeVariants() {
		class := kv.class
		t.Run(kv.label, func(t *testing.T) {
			env := []string{"HOME=" + t.TempDir(), "MCP_BRIDGE_RUNTIME=" + engine.BackendKubernetes,
				"MCP_BRIDGE_K8S_RUNTIME_CLASS=" + class}
			stdout, stderr, code, took := runDoctorCLI(t, env, "--json")
			t.Logf("doctor --json took %v", took)
			checks := byCheck(t, stdout)
			// The facts of the routes check, which doctorCheck leaves out.
			var facts []struct {
				Check  string
				Routes []string
			}
			json.Unmarshal([]byte(stdout), &facts)
			var routes []string
			for _, c := range facts {
				if c.Check == "routes" {
					routes = append(routes, c.Routes...)
				}
			}
			if len(checks["engine"]) != 1 || checks["engine"][0].Status != "ok" || checks["engine"][0].Engine != engine.BackendKubernetes {
				t.Fatalf("engine: %+v\nstderr %s", checks["engine"], stderr)
			}
			if r := checks["routes"]; len(r) != 1 || r[0].Status != "ok" || !strings.Contains(r[0].Detail, "pods have no route out") ||
				len(routes) != 0 {
				t.Fatalf("routes: %+v %q\nstdout %s\nstderr %s", r, routes, stdout, stderr)
			}
			if code != 0 {
				t.Errorf("exit %d; want 0\nstdout %s\nstderr %s", code, stdout, stderr)
			}
			// The pod is deleted before doctor exits (it may still be
			// terminating, never running).
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, "kubectl", "get", "pods", "-n", kubeNamespace(),
				"-l", engine.LabelSession+"=doctor", "-o", "jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{\"\\n\"}{end}").CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl get pods: %v: %s", err, out)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if name, deleting, _ := strings.Cut(line, " "); name != "" && deleting == "" {
					t.Errorf("pod %s is left after doctor", name)
				}
			}
		})
	}
}

// kubeNamespace is the namespace of the sandbox pods.
func kubeNamespace() string {
	if ns := os.Getenv("MCP_BRIDGE_K8S_NAMESPACE"); ns != "" {
		return ns
	}
	return engine.DefaultK8sNamespace
}
