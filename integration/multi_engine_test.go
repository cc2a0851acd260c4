//go:build integration

package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// An engineReport is the part of /healthz that reports several engines.
type engineReport struct {
	Status  string               `json:"status"`
	Engine  string               `json:"engine"`
	Engines []engine.EngineState `json:"engines"`
}

// health returns the bridge's /healthz answer.
func (b *httpBridge) health(t testing.TB) (int, engineReport) {
	t.Helper()
	resp, err := b.httpClient(b.token).Get(strings.TrimSuffix(b.url, "/mcp") + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var rep engineReport
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatalf("GET /healthz: %d %q: %v", resp.StatusCode, body, err)
	}
	return resp.StatusCode, rep
}

// ownedBy reports whether a container whose ID begins with prefix is among
// the containers of bridge pid on e.
func ownedBy(t testing.TB, e testEngine, pid int, prefix string) bool {
	t.Helper()
	return slices.ContainsFunc(containersOf(t, e, pid), func(c engine.SandboxInfo) bool {
		return strings.HasPrefix(c.ID, prefix)
	})
}

// TestEnginesDockerAndPodman serves with MCP_BRIDGE_ENGINES naming the
// local Docker daemon and the Podman service: sessions are spread over
// both, the least loaded first, and /healthz and /metrics report each.
func TestEnginesDockerAndPodman(t *testing.T) {
	names := engineNames()
	if !slices.Contains(names, "docker") || !slices.Contains(names, "podman") {
		t.Skip("needs both docker and podman in MCP_TEST_ENGINES")
	}
	t.Parallel()
	d, p := connect(t, "docker"), connect(t, "podman")
	b := startHTTPBridge(t, d, httpOpts{env: []string{
		"MCP_BRIDGE_RUNTIME=", "MCP_BRIDGE_POOL_SIZE=0",
		"MCP_BRIDGE_ENGINES=docker podman",
	}})
	a := b.sandboxOf(t, b.session(t, nil)) // checks it is on docker
	s2 := b.session(t, nil)
	host, isErr := runPython(t, s2, map[string]any{"code": "import socket\nprint(socket.gethostname())"})
	if isErr || !ownedBy(t, p, b.pid, host) {
		t.Fatalf("second session's sandbox %q is not on podman: %v", host, containersOf(t, p, b.pid))
	}
	if ownedBy(t, d, b.pid, host) || !ownedBy(t, d, b.pid, a) {
		t.Fatalf("sessions not one per engine: docker has %v", containersOf(t, d, b.pid))
	}
	code, rep := b.health(t)
	if code != http.StatusOK || rep.Engine != "docker,podman" || len(rep.Engines) != 2 ||
		!rep.Engines[0].Up || !rep.Engines[1].Up || rep.Engines[0].Sandboxes != 1 || rep.Engines[1].Sandboxes != 1 {
		t.Fatalf("/healthz: %d %+v", code, rep)
	}
	resp, err := b.httpClient(b.token).Get(strings.TrimSuffix(b.url, "/mcp") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`mcp_bridge_engine_up{engine="docker"} 1`, `mcp_bridge_engine_sandboxes{engine="podman"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	b.cleanup()
	if left := containersOf(t, p, b.pid); len(left) > 0 {
		t.Errorf("containers left on podman: %v", left)
	}
}
