//go:build integration

package integration

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// runCLI runs the built binary with args, stdin and extra environment.
func runCLI(t *testing.T, stdin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(envWithout("MCP_BRIDGE_RUNTIME", "MCP_BRIDGE_MEMORY"), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

func TestCLIExec(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		rt := []string{"MCP_BRIDGE_RUNTIME=" + e.Name()}
		if out, errs, code := runCLI(t, "", rt, "exec", "-c", "print(2+2)"); out != "4\n" || code != 0 {
			t.Errorf("exec -c: stdout %q, stderr %q, code %d", out, errs, code)
		}
		if out, errs, code := runCLI(t, "import sys\nprint('from stdin')\nprint('oops', file=sys.stderr)\nsys.exit(3)\n", rt, "exec"); out != "from stdin\n" || errs != "oops\n" || code != 3 {
			t.Errorf("exec from stdin: stdout %q, stderr %q, code %d", out, errs, code)
		}
		out, errs, code := runCLI(t, "", append(rt, "MCP_BRIDGE_MEMORY=48m"), "exec", "-c", "x = [b'x' * (1 << 20) for _ in range(200)]")
		if code != 137 || !strings.Contains(errs, "OOM-killed") {
			t.Errorf("exec of a memory bomb: stdout %q, stderr %q, code %d; want 137 and an OOM report", out, errs, code)
		}
		out, errs, code = runCLI(t, "", rt, "exec", "-timeout", "2s", "-c", "while True: pass")
		if code != 124 || !strings.Contains(errs, "timed out") {
			t.Errorf("exec of a busy loop with -timeout 2s: stdout %q, stderr %q, code %d", out, errs, code)
		}
	})
}

func TestCLIRejectsBadSettings(t *testing.T) {
	_, errs, code := runCLI(t, "", []string{"MCP_BRIDGE_MEMORY=lots"}, "exec", "-c", "print(1)")
	if code != 125 || !strings.Contains(errs, "MCP_BRIDGE_MEMORY") || !strings.Contains(errs, "lots") {
		t.Fatalf("stderr %q, code %d; want exit 125 naming MCP_BRIDGE_MEMORY", errs, code)
	}
}

func TestCLIUnreachableEngineOneClearError(t *testing.T) {
	_, errs, code := runCLI(t, "", []string{"MCP_BRIDGE_RUNTIME=docker", "DOCKER_HOST=unix:///nonexistent/docker.sock"}, "exec", "-c", "print(1)")
	if code != 125 || strings.Count(strings.TrimSpace(errs), "\n") != 0 ||
		!strings.Contains(errs, "no container engine is reachable") || !strings.Contains(errs, "/nonexistent/docker.sock") {
		t.Fatalf("stderr %q, code %d; want one line naming the engine tried", errs, code)
	}
}
