//go:build integration

package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// labelTest marks the containers a test starts that are not sandboxes
// (the bridge's own container here), so that a leftover is recognisable.
const labelTest = engine.LabelBridge + ".test"

// TestBridgeImage builds the bridge's image with scripts/bridge-image and
// runs it as an operator would on a Docker host: host networking,
// listening on 127.0.0.1, a read-only root, no capabilities, no new
// privileges, the engine's socket mounted with its group added. A real
// MCP client over Streamable HTTP runs a call there, which must run in a
// sibling sandbox container of the host's Docker, labelled as the bridge
// labels its sandboxes and owned by the bridge's container; stopping the
// container must remove it.
func TestBridgeImage(t *testing.T) {
	t.Parallel()
	if !slices.Contains(engineNames(), "docker") {
		t.Skip("docker is not in MCP_TEST_ENGINES")
	}
	e := connect(t, "docker")
	sock := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		p, ok := strings.CutPrefix(h, "unix://")
		if !ok {
			t.Skipf("the image is run with the engine's socket mounted; DOCKER_HOST=%s is not a unix socket", h)
		}
		sock = p
	}
	var st syscall.Stat_t
	if err := syscall.Stat(sock, &st); err != nil {
		t.Fatalf("the Docker socket: %v", err)
	}

	tag := "localhost/mcp-bridge:integration"
	buildBridgeImage(t, tag)

	// The image: its user, its stamped version, its default command's
	// refusal to serve beyond loopback without a token.
	if user := dockerCLI(t, "image", "inspect", "--format", "{{.Config.User}}", tag); user != "65532:65532" {
		t.Errorf("the image's user: %q, want 65532:65532", user)
	}
	labelled := dockerCLI(t, "image", "inspect", "--format", `{{index .Config.Labels "org.opencontainers.image.version"}}`, tag)
	if v := dockerCLI(t, "run", "--rm", "--network", "none", "--label", labelTest+"=TestBridgeImage", tag, "version"); labelled == "" || labelled == "dev" ||
		!strings.HasPrefix(v, "mcp-server-code-execution-mode "+labelled+" (engines: docker, podman, kubernetes; ") {
		t.Errorf("version: %q; the image's version label %q", v, labelled)
	}
	out, err := exec.Command("docker", "run", "--rm", "--network", "none", "--label", labelTest+"=TestBridgeImage", tag).CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "MCP_BRIDGE_HTTP_TOKEN") {
		t.Errorf("the default command without a token: exit %d (want 2, refused), %q", code, out)
	}

	// The bridge, as deploy/README.md runs it.
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	name := "mcp-bridge-test-" + hex.EncodeToString(suffix)
	token := hex.EncodeToString(append(suffix, suffix...))
	args := []string{"run", "--detach", "--name", name, "--label", labelTest + "=TestBridgeImage",
		// The host's network, but a host name of its own: the bridge's
		// sandboxes are labelled with it, and bridges of one host name
		// take each other's containers for orphans of dead processes.
		"--network", "host", "--hostname", name,
		"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--volume", sock + ":/var/run/docker.sock", "--group-add", strconv.FormatUint(uint64(st.Gid), 10),
		"--env", "MCP_BRIDGE_HTTP_TOKEN=" + token, "--env", "MCP_BRIDGE_POOL_SIZE=1", "--env", "MCP_BRIDGE_LOG_LEVEL=INFO"}
	if img := os.Getenv("MCP_BRIDGE_IMAGE"); img != "" {
		args = append(args, "--env", "MCP_BRIDGE_IMAGE="+img)
	}
	args = append(args, tag, "serve", "-http", fmt.Sprintf("127.0.0.1:%d", port))
	dockerCLI(t, args...)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command("docker", "logs", "--tail", "200", name).CombinedOutput()
			t.Logf("the bridge's log (last 200 lines):\n%s", logs)
		}
		exec.Command("docker", "rm", "--force", name).Run()
		// Sandboxes it would have left, by its host name.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, s := range sandboxesOfHost(t, e, name) {
			exec.CommandContext(ctx, "docker", "rm", "--force", s.ID).Run()
		}
	})

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	br := &httpBridge{t: t, url: base + "/mcp", token: token, base: &http.Transport{}}
	defer br.base.CloseIdleConnections()
	waited := waitFor(t, time.Minute, "GET /healthz answering ok", func() bool {
		if dockerCLI(t, "inspect", "--format", "{{.State.Running}}", name) != "true" {
			t.Fatalf("the bridge's container stopped")
		}
		resp, err := br.httpClient(token).Get(base + "/healthz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var h struct{ Status, Engine string }
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&h) == nil && h.Status == "ok" && h.Engine == "docker"
	})
	t.Logf("/healthz ok %v after the container's start", waited.Round(time.Millisecond))
	if resp, err := http.Get(base + "/healthz"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /healthz without the token: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}

	cs := br.session(t, nil)
	text, isErr := runPython(t, cs, map[string]any{"code": "import os, socket\nprint(6*7, os.getuid(), socket.gethostname())"})
	m := regexp.MustCompile(`^42 65534 ([0-9a-f]{12})$`).FindStringSubmatch(text)
	if isErr || m == nil {
		t.Fatalf("run_python: %q (error %v), want 42 65534 and the sandbox's host name", text, isErr)
	}
	var sandbox *engine.SandboxInfo
	for _, s := range sandboxesOfHost(t, e, name) {
		if strings.HasPrefix(s.ID, m[1]) {
			sandbox = &s
		}
	}
	if sandbox == nil {
		t.Fatalf("the sandbox %s is no container of the bridge's (%s) on the host's Docker", m[1], name)
	}
	if sandbox.Labels[engine.LabelBridge] != "1" || sandbox.Labels[engine.LabelPID] != "1" || sandbox.State != "running" {
		t.Errorf("the sandbox %s: labels %v, state %s; want %s=1, the bridge's PID 1, running", m[1], sandbox.Labels, sandbox.State, engine.LabelBridge)
	}
	if text, isErr := runPython(t, cs, map[string]any{"code": "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:" + strconv.Itoa(port) + "/healthz', timeout=2)"}); !isErr {
		t.Errorf("the sandbox reached the bridge's port on the host: %q", text)
	}
	cs.Close()

	// SIGTERM (docker stop): the bridge ends its sessions, removes its
	// sandboxes and exits 0.
	dockerCLI(t, "stop", "--time", "30", name)
	if code := dockerCLI(t, "inspect", "--format", "{{.State.ExitCode}}", name); code != "0" {
		t.Errorf("the bridge's exit status after docker stop: %s, want 0", code)
	}
	waitFor(t, 10*time.Second, "the bridge's sandboxes removed", func() bool { return len(sandboxesOfHost(t, e, name)) == 0 })
}

// buildBridgeImage runs scripts/bridge-image --tag tag, which must print
// only the tag on stdout.
func buildBridgeImage(t *testing.T, tag string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", "../scripts/bridge-image", "--tag", tag)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("scripts/bridge-image: %v\n%s", err, tail(stderr.String(), 8<<10))
	}
	if got := stdout.String(); got != tag+"\n" {
		t.Errorf("scripts/bridge-image's stdout: %q, want the tag alone", got)
	}
	size := regexp.MustCompile(`: \d+ KiB \(([\d.]+ MiB)\)`).FindStringSubmatch(stderr.String())
	if size == nil {
		t.Fatalf("scripts/bridge-image did not report the image's size:\n%s", tail(stderr.String(), 4<<10))
	}
	t.Logf("scripts/bridge-image: %s in %v", size[1], time.Since(began).Round(time.Second))
}

// sandboxesOfHost returns the sandboxes on e whose bridge ran under the
// host name host.
func sandboxesOfHost(t testing.TB, e testEngine, host string) []engine.SandboxInfo {
	t.Helper()
	return sandboxesLabelled(t, e, engine.LabelHost, host)
}

// dockerCLI runs the docker CLI and returns its stdout, trimmed; it fails
// the test when the command fails.
func dockerCLI(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// exitCode returns a command's exit status from its error (0 for nil,
// -1 when it did not run to an exit).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// tail returns at most the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
