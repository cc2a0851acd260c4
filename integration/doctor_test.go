//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A doctorCheck is one object of `doctor --json`.
type doctorCheck struct {
	Check      string `json:"check"`
	Status     string `json:"status"`
	Detail     string `json:"detail"`
	Hint       string `json:"hint"`
	DurationMS *int64 `json:"duration_ms"`

	Engine      string `json:"engine"`
	Version     string `json:"version"`
	APIVersion  string `json:"api_version"`
	Address     string `json:"address"`
	Image       string `json:"image"`
	StartMS     *int64 `json:"start_ms"`
	Properties  []struct{ Name, Status, Want, Got string }
	WantRuntime string   `json:"want_runtime"`
	Runtime     string   `json:"runtime"`
	File        string   `json:"file"`
	Line        int      `json:"line"`
	Column      int      `json:"column"`
	Servers     []string `json:"servers"`
	Server      string   `json:"server"`
	Tools       *int     `json:"tools"`
}

// runDoctorCLI runs the binary's doctor with args and env added, in a
// working directory of its own, and returns its output, exit code and
// how long it took.
func runDoctorCLI(t *testing.T, env []string, args ...string) (stdout, stderr string, code int, took time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), append([]string{"doctor"}, args...)...)
	cmd.Env = append(envWithout("HOME", "MCP_BRIDGE_RUNTIME", "MCP_BRIDGE_STATE_DIR", "MCP_SERVERS_CONFIG",
		"MCP_BRIDGE_OCI_RUNTIME", "MCP_BRIDGE_ENGINES", "MCP_BRIDGE_LOG_LEVEL"), env...)
	cmd.Dir = t.TempDir()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	began := time.Now()
	err := cmd.Run()
	took = time.Since(began)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode(), took
}

// byCheck groups the checks of a report by name, in order.
func byCheck(t *testing.T, stdout string) map[string][]doctorCheck {
	t.Helper()
	var checks []doctorCheck
	if err := json.Unmarshal([]byte(stdout), &checks); err != nil {
		t.Fatalf("doctor --json: stdout is not one JSON array: %v\n%s", err, stdout)
	}
	m := map[string][]doctorCheck{}
	for _, c := range checks {
		if c.DurationMS == nil {
			t.Errorf("%s: no duration_ms", c.Check)
		}
		m[c.Check] = append(m[c.Check], c)
	}
	return m
}

// TestDoctor runs `doctor --json` on each engine with a configuration file
// naming two real npm servers and a broken one, then with the broken file
// gone.
func TestDoctor(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		bin := filepath.Join(nodeDir(t), "node_modules", ".bin")
		home := t.TempDir()
		good, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"everything": map[string]any{"command": filepath.Join(bin, "mcp-server-everything")},
			"memory": map[string]any{"command": filepath.Join(bin, "mcp-server-memory"),
				"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(home, "memory.jsonl")}},
		}})
		writeFile(t, filepath.Join(home, "MCPs", "servers.json"), string(good))
		broken := filepath.Join(home, ".cursor", "mcp.json")
		writeFile(t, broken, "{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"x\"}\n    \"y\": {\"command\": \"y\"}\n  }\n}\n")
		env := []string{"HOME=" + home, "MCP_BRIDGE_RUNTIME=" + e.Name()}

		stdout, stderr, code, took := runDoctorCLI(t, env, "--json")
		t.Logf("%s: doctor --json took %v", e.Name(), took)
		checks := byCheck(t, stdout)
		if code != 1 {
			t.Errorf("exit %d; want 1 (the broken file)\nstdout %s\nstderr %s", code, stdout, stderr)
		}
		one := func(name string) doctorCheck {
			t.Helper()
			if len(checks[name]) != 1 {
				t.Fatalf("%d %q checks; want 1\n%s", len(checks[name]), name, stdout)
			}
			return checks[name][0]
		}
		if c := one("engine"); c.Status != "ok" || c.Engine != e.Name() || c.Version == "" || c.APIVersion == "" || c.Address == "" {
			t.Errorf("engine: %+v", c)
		}
		if c := one("image"); c.Status != "ok" || c.Image != settings(t).Session.Spec.Image {
			t.Errorf("image: %+v", c)
		}
		hard := one("hardening")
		if hard.Status != "ok" || hard.StartMS == nil || len(hard.Properties) < 8 {
			t.Errorf("hardening: %+v", hard)
		}
		for _, p := range hard.Properties {
			if p.Status != "ok" || p.Name == "user" && p.Got != "65534:65534" {
				t.Errorf("hardening property %+v", p)
			}
		}
		if c := one("runtime"); c.Status != "ok" || c.Runtime == "" || c.Runtime != c.WantRuntime {
			t.Errorf("runtime: %+v", c)
		}
		configs := checks["config"]
		if len(configs) != 2 {
			t.Fatalf("config checks %+v; want 2", configs)
		}
		if c := configs[0]; c.Status != "ok" || c.File != filepath.Join(home, "MCPs", "servers.json") || strings.Join(c.Servers, ",") != "everything,memory" {
			t.Errorf("good file: %+v", c)
		}
		if c := configs[1]; c.Status != "fail" || c.File != broken || c.Line != 4 || c.Column != 5 ||
			!strings.HasPrefix(c.Detail, broken+":4:5: invalid character '\"' after object key:value pair") || c.Hint == "" {
			t.Errorf("broken file: %+v", c)
		}
		servers := checks["server"]
		if len(servers) != 2 {
			t.Fatalf("server checks %+v; want 2", servers)
		}
		for _, c := range servers {
			if c.Status != "ok" || c.Tools == nil || *c.Tools == 0 || c.StartMS == nil {
				t.Errorf("server: %+v", c)
			}
		}

		// Everything good: exit 0, in the human format.
		if err := os.Remove(broken); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code, _ = runDoctorCLI(t, env)
		t.Logf("%s:\n%s", e.Name(), stdout)
		if code != 0 || strings.Contains(stdout, "FAIL") || strings.Count(stdout, "\nok    server    ") != 2 {
			t.Errorf("exit %d; want 0\nstdout %s\nstderr %s", code, stdout, stderr)
		}
	})
}

// TestDoctorDeadEngine runs doctor against a Docker address where nothing
// listens: it fails within seconds, naming the address, and skips what
// needs the engine.
func TestDoctorDeadEngine(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	stdout, stderr, code, took := runDoctorCLI(t, []string{"HOME=" + t.TempDir(), "MCP_BRIDGE_RUNTIME=docker", "DOCKER_HOST=tcp://" + addr})
	if code != 1 || took > 15*time.Second {
		t.Fatalf("exit %d after %v; want 1 within 15 s\nstdout %s\nstderr %s", code, took, stdout, stderr)
	}
	for _, want := range []string{"FAIL  engine    ", addr, "      hint: ", "skip  image     ", "skip  hardening ", "skip  runtime   "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// TestDoctorSeveralEngines checks each engine of MCP_BRIDGE_ENGINES in
// turn: the local Docker daemon and Podman service pass, a dead one fails
// and its later checks are skipped.
func TestDoctorSeveralEngines(t *testing.T) {
	t.Parallel()
	if !slices.Contains(engineNames(), "docker") || !slices.Contains(engineNames(), "podman") {
		t.Skip("needs both docker and podman in MCP_TEST_ENGINES")
	}
	dead := "tcp://" + closedPort(t)
	stdout, stderr, code, _ := runDoctorCLI(t, []string{"HOME=" + t.TempDir(), "MCP_BRIDGE_ENGINES=docker podman docker=" + dead}, "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstderr %s", code, stderr)
	}
	m := byCheck(t, stdout)
	eng, hard := m["engine"], m["hardening"]
	if len(eng) != 3 || eng[0].Status != "ok" || eng[0].Engine != "docker" || eng[1].Status != "ok" || eng[1].Engine != "podman" ||
		eng[2].Status != "fail" || !strings.Contains(eng[2].Detail, strings.TrimPrefix(dead, "tcp://")) {
		t.Fatalf("engine checks: %+v", eng)
	}
	if len(hard) != 3 || hard[0].Status != "ok" || hard[1].Status != "ok" || hard[2].Status != "skip" {
		t.Fatalf("hardening checks: %+v", hard)
	}
}

// writeFile writes content to path, making its directory.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
