//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
	t.Parallel()
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
	t.Parallel()
	_, errs, code := runCLI(t, "", []string{"MCP_BRIDGE_MEMORY=lots"}, "exec", "-c", "print(1)")
	if code != 125 || !strings.Contains(errs, "MCP_BRIDGE_MEMORY") || !strings.Contains(errs, "lots") {
		t.Fatalf("stderr %q, code %d; want exit 125 naming MCP_BRIDGE_MEMORY", errs, code)
	}
}

func TestCLIUnreachableEngineOneClearError(t *testing.T) {
	t.Parallel()
	_, errs, code := runCLI(t, "", []string{"MCP_BRIDGE_RUNTIME=docker", "DOCKER_HOST=unix:///nonexistent/docker.sock"}, "exec", "-c", "print(1)")
	if code != 125 || strings.Count(strings.TrimSpace(errs), "\n") != 0 ||
		!strings.Contains(errs, "no container engine is reachable") || !strings.Contains(errs, "/nonexistent/docker.sock") {
		t.Fatalf("stderr %q, code %d; want one line naming the engine tried", errs, code)
	}
}

// TestCLIExecKeepsOutputs: exec -f runs a file (and - reads stdin); a
// figure and files of /workspace/out are saved under -out DIR (images
// numbered, files at their path), or named on stderr as not saved; -json
// prints the whole result; the exit status is the code's.
func TestCLIExecKeepsOutputs(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		rt := []string{"MCP_BRIDGE_RUNTIME=" + e.Name(), "MCP_BRIDGE_IMAGE=" + dataImage()}
		dir := t.TempDir()
		script := filepath.Join(dir, "report.py")
		code := `import os
import matplotlib.pyplot as plt
os.makedirs("/workspace/out/tables", exist_ok=True)
open("/workspace/out/by_region.csv", "w").write("region,total\nnorth,3\n")
open("/workspace/out/tables/big.bin", "wb").write(b"x" * 3_000_000)
plt.plot([1, 2, 3]); plt.show()
print("done")
`
		if err := os.WriteFile(script, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		// Without -out: the output, and what was not kept named on stderr.
		out, errs, status := runCLI(t, "", rt, "exec", "-f", script)
		if out != "done\n" || status != 0 || !strings.Contains(errs, "not saved: 1 image and 2 files of /workspace/out (by_region.csv, tables/big.bin)") ||
			!strings.Contains(errs, "-out DIR") {
			t.Fatalf("exec -f: stdout %q, stderr %q, code %d", out, errs, status)
		}
		// With -out, from stdin (-f -).
		keep := filepath.Join(dir, "kept")
		if out, errs, status := runCLI(t, code, rt, "exec", "-f", "-", "-out", keep); out != "done\n" || status != 0 || strings.Contains(errs, "not saved") {
			t.Fatalf("exec -f - -out: stdout %q, stderr %q, code %d", out, errs, status)
		}
		if b, err := os.ReadFile(filepath.Join(keep, "by_region.csv")); err != nil || string(b) != "region,total\nnorth,3\n" {
			t.Fatalf("by_region.csv under -out: %q %v", b, err)
		}
		if fi, err := os.Stat(filepath.Join(keep, "tables", "big.bin")); err != nil || fi.Size() != 3_000_000 {
			t.Fatalf("tables/big.bin under -out (read through the engine): %v %v", fi, err)
		}
		if b, err := os.ReadFile(filepath.Join(keep, "image-1.png")); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("image-1.png under -out: %d bytes, %v", len(b), err)
		}
		// -json: the whole result; the exit status still the code's.
		out, errs, status = runCLI(t, "", rt, "exec", "-json", "-c", "print('hi')\nopen('/workspace/out/a.txt', 'w').write('a')\nraise SystemExit(3)")
		var res struct {
			Status   string `json:"status"`
			Stdout   string `json:"stdout"`
			ExitCode int    `json:"exit_code"`
			Files    []struct {
				Path string `json:"path"`
				Size int64  `json:"size"`
			} `json:"files"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || status != 3 || res.Status != "exit" || res.Stdout != "hi\n" || res.ExitCode != 3 ||
			len(res.Files) != 1 || res.Files[0].Path != "/workspace/out/a.txt" || res.Files[0].Size != 1 {
			t.Fatalf("exec -json: %v; stdout %q, stderr %q, code %d", err, out, errs, status)
		}
		if _, errs, status := runCLI(t, "", rt, "exec", "-c", "1", "-f", script); status != 2 || !strings.Contains(errs, "use one") {
			t.Fatalf("exec -c and -f: stderr %q, code %d", errs, status)
		}
	})
}
