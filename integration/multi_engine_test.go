//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/docker"
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

// badEngines starts two engines that are no engines, on loopback TCP: one
// accepts connections and never answers, one closes each at once. It
// returns their addresses.
func badEngines(t *testing.T) (silent, dropping string) {
	t.Helper()
	listen := func(serve func(net.Conn)) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var conns sync.WaitGroup
		t.Cleanup(func() { ln.Close(); conns.Wait() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				conns.Go(func() { serve(c) })
			}
		}()
		return "tcp://" + ln.Addr().String()
	}
	silent = listen(func(c net.Conn) {
		defer c.Close()
		io.Copy(io.Discard, c) // reads, never answers
	})
	dropping = listen(func(c net.Conn) { c.Close() })
	return silent, dropping
}

// TestEnginesBadInput runs `exec` with engines that cannot serve before a
// good one: the code runs on the good one in bounded time; with no good
// one, the error names each engine and why, and nothing panics.
func TestEnginesBadInput(t *testing.T) {
	if !slices.Contains(engineNames(), "docker") {
		t.Skip("needs docker in MCP_TEST_ENGINES")
	}
	connect(t, "docker")
	t.Parallel()
	silent, dropping := badEngines(t)
	closed := "tcp://" + closedPort(t)
	wrongCerts := t.TempDir()
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		os.WriteFile(filepath.Join(wrongCerts, f), []byte("not a certificate\n"), 0o600)
	}
	bad := []string{"docker=" + silent, "docker=" + dropping, "docker=" + closed,
		"docker=tcp://127.0.0.1:9?certs=" + wrongCerts}

	began := time.Now()
	out, errOut, code := runCLI(t, "", []string{"MCP_BRIDGE_ENGINES=" + strings.Join(append(bad, "docker"), ",")},
		"exec", "-c", "print(6*7)")
	took := time.Since(began)
	if code != 0 || out != "42\n" {
		t.Fatalf("exec past bad engines: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	if took > 45*time.Second {
		t.Errorf("exec past bad engines took %v", took)
	}
	t.Logf("past 4 bad engines: %v", took.Round(time.Millisecond))

	began = time.Now()
	out, errOut, code = runCLI(t, "", []string{"MCP_BRIDGE_ENGINES=" + strings.Join(bad, " ")}, "exec", "-c", "print(1)")
	took = time.Since(began)
	if code == 0 || out != "" {
		t.Fatalf("exec on bad engines only: exit %d, stdout %q", code, out)
	}
	for _, want := range append([]string{"MCP_BRIDGE_ENGINES", "none of the 4 engines", "no answer within 5s"}, silent, dropping, closed, "certificate") {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "panic") || took > 45*time.Second {
		t.Errorf("took %v; stderr:\n%s", took, errOut)
	}

	_, errOut, code = runCLI(t, "", []string{"MCP_BRIDGE_ENGINES=docker,dockr=unix:///x"}, "exec", "-c", "print(1)")
	if code == 0 || !strings.Contains(errOut, `MCP_BRIDGE_ENGINES: engine 2 ("dockr=unix:///x"): unknown backend "dockr"`) {
		t.Errorf("garbage list: exit %d, stderr %q", code, errOut)
	}
}

// closedPort returns a loopback host:port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// callText runs code in cs and returns the text of the result (an error's
// text when the call fails).
func callText(cs *mcp.ClientSession, code string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
	if err != nil {
		return err.Error(), true
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// TestEnginesFailover serves with MCP_BRIDGE_ENGINES naming the local
// Docker daemon and the mutual-TLS one over TCP, then stops the TLS one
// mid-run: its session's next call runs on the local daemon with a notice
// naming both engines, the health report shows it down and the bridge
// healthy, and once it is back a new session goes to it, where the dead
// sandbox's container is cleaned up. (Not parallel: it stops the TLS
// daemon other tests use.)
func TestEnginesFailover(t *testing.T) {
	t.Parallel()
	if !slices.Contains(engineNames(), "docker") {
		t.Skip("needs docker in MCP_TEST_ENGINES")
	}
	d := tlsDaemon(t)
	local := connect(t, "docker")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	remote, err := docker.New(ctx, &docker.Options{Host: d.Host, CertPath: d.CertPath, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remote.Close() })
	localName, remoteName := "docker@unix:///var/run/docker.sock", "docker@"+d.Host
	b := startHTTPBridge(t, local, httpOpts{env: []string{
		"MCP_BRIDGE_RUNTIME=", "MCP_BRIDGE_POOL_SIZE=0",
		"MCP_BRIDGE_ENGINES=docker=unix:///var/run/docker.sock, docker=" + d.Host + "?certs=" + d.CertPath,
	}})
	hostOf := func(cs *mcp.ClientSession, set string) string {
		t.Helper()
		host, isErr := runPython(t, cs, map[string]any{"code": set + "\nimport socket\nprint(socket.gethostname())"})
		if isErr || len(host) < 12 {
			t.Fatalf("hostname: %q", host)
		}
		return host
	}
	a, s := b.session(t, nil), b.session(t, nil)
	if h := hostOf(a, "x = 1"); !ownedBy(t, local, b.pid, h) {
		t.Fatalf("first session's sandbox %s is not on the local daemon", h)
	}
	if h := hostOf(s, "y = 2"); !ownedBy(t, remote, b.pid, h) {
		t.Fatalf("second session's sandbox %s is not on the TLS daemon", h)
	}

	d.Stop(t)
	stopped := time.Now()
	var text string
	for range 3 { // the call that finds the sandbox dead may fail; the next starts anew
		var isErr bool
		if text, isErr = callText(s, "import socket\nprint('y' in globals(), socket.gethostname())"); !isErr {
			break
		}
	}
	failover := time.Since(stopped)
	want := "the new sandbox runs on engine " + localName + " (the previous one ran on " + remoteName + ")"
	if !strings.Contains(text, "False ") || !strings.Contains(text, want) {
		t.Fatalf("after the TLS daemon stopped: %q, want False and the notice %q", text, want)
	}
	host := strings.Fields(strings.SplitN(text, "\n", 2)[0])[1]
	if !ownedBy(t, local, b.pid, host) {
		t.Fatalf("the re-created sandbox %s is not on the local daemon", host)
	}
	if text, isErr := callText(a, "print(x)"); isErr || text != "1" {
		t.Fatalf("the session on the local daemon: %q", text)
	}
	t.Logf("failover: the session's next call answered %v after the daemon stopped", failover.Round(time.Millisecond))
	var rep engineReport
	waitFor(t, 10*time.Second, "/healthz to report the TLS daemon down", func() bool {
		var code int
		code, rep = b.health(t)
		if code != http.StatusOK || rep.Status != "ok" || len(rep.Engines) != 2 {
			t.Fatalf("/healthz with one engine down: %d %+v", code, rep)
		}
		return !rep.Engines[1].Up
	})
	if rep.Engines[1].Error == "" || !rep.Engines[0].Up {
		t.Fatalf("/healthz engines: %+v", rep.Engines)
	}

	d.Start(t)
	waitFor(t, 30*time.Second, "/healthz to report the TLS daemon up", func() bool {
		_, rep = b.health(t)
		return rep.Engines[1].Up
	})
	c := b.session(t, nil)
	if h := hostOf(c, "z = 3"); !ownedBy(t, remote, b.pid, h) {
		t.Fatalf("a new session after the TLS daemon came back is not on it (%s), engines %+v", h, rep.Engines)
	}
	// The container of the sandbox that died with the daemon was left
	// there (its removal failed); the next start on that engine removed it.
	waitFor(t, 10*time.Second, "the dead sandbox's container to be removed", func() bool {
		return len(containersOf(t, remote, b.pid)) == 1
	})
	b.cleanup()
	if left := containersOf(t, remote, b.pid); len(left) > 0 {
		t.Errorf("containers left on the TLS daemon: %v", left)
	}
}
