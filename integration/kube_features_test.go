//go:build integration

package integration

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// setKubeEnv sets env (a forEachKubeClass environment) in the test's own
// environment, for helpers that start the bridge with the process's
// environment and take no more of it (liveCancel, runTSClient).
func setKubeEnv(t *testing.T, env []string) {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// TestKubeEgress: TestEgressGateway on pods, under runc and gVisor: the
// gateway's connections travel over the sandbox protocol in the pod's
// attached streams, so code reaches the loopback hosts the policy allows
// (the operator's token added on the way out, over HTTP and HTTPS) and is
// refused the others, and the token is nowhere inside.
func TestKubeEgress(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, _ testEngine, env []string, _ bool) {
		checkEgress(t, goClient(t, engine.BackendKubernetes, env...))
	})
}

// TestKubeLiveInstall: TestLiveInstall on pods, under runc and gVisor:
// runtime.install fetches a package of a loopback index through the
// bridge and puts it in the pod's /opt/mcp-site, importable on the next
// line with the session's state kept.
func TestKubeLiveInstall(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, _ testEngine, env []string, _ bool) {
		checkLiveInstall(t, engine.BackendKubernetes, env...)
	})
}

// TestKubePackageSetRefused: a package set (MCP_BRIDGE_PACKAGES) needs a
// named volume, which pods have none of: the first call says so, naming
// what works instead, and runs nothing (runc is enough: nothing reaches
// the runtime class).
func TestKubePackageSetRefused(t *testing.T) {
	kubeRequired(t)
	cs := connectBridge(t, engine.BackendKubernetes, "MCP_BRIDGE_PACKAGES=six", "MCP_BRIDGE_POOL_SIZE=0")
	text, isErr := callText(cs, "print('ran')")
	if !isErr || strings.Contains(text, "ran") || !strings.Contains(text, "package sets (MCP_BRIDGE_PACKAGES) need Docker or Podman") ||
		!strings.Contains(text, "runtime.install") {
		t.Fatalf("a package set on pods: %v %q", isErr, text)
	}
}

// TestKubeFigures: a matplotlib figure drawn on a pod of the data image
// comes back as image content (a PNG that decodes), a file written to
// /workspace/out as an embedded resource, under runc and gVisor.
func TestKubeFigures(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, _ testEngine, env []string, _ bool) {
		cs := connectBridge(t, engine.BackendKubernetes, append(env, "MCP_BRIDGE_IMAGE="+dataImage())...)
		res := callRich(t, cs, `import matplotlib.pyplot as plt
plt.plot([1, 2, 3], [1, 4, 9]); plt.title("squares"); plt.show()
open("/workspace/out/notes.md", "w").write("# notes\n")
print("drawn")`)
		c := sortContent(t, res)
		if res.IsError || !strings.HasPrefix(c.text, "drawn\nfiles out: notes.md") || len(c.images) != 1 || len(c.embedded) != 1 {
			t.Fatalf("a figure and a file: isError %v, text %q, %d images, %d embedded", res.IsError, c.text, len(c.images), len(c.embedded))
		}
		checkPNG(t, "the figure", c.images[0])
		if c.embedded[0].URI != "sandbox://files/notes.md" || c.embedded[0].Text != "# notes\n" {
			t.Fatalf("the file out: %+v", c.embedded[0])
		}
	})
}

// TestKubeProgress: on a pod, a call with a progress token sends the
// code's runtime.report_progress figures and its output lines as
// notifications/progress while it runs, under runc and gVisor.
func TestKubeProgress(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, _ testEngine, env []string, _ bool) {
		notes := newNoteLog()
		cs, _ := connectLive(t, engine.BackendKubernetes, notes, env...)
		text, isErr := mustLiveCall(t, cs, notes, "reports", map[string]any{"code": `import time
from mcp import runtime
for i, p in enumerate((10, 20, 30)):
    runtime.report_progress(p, total=100, message=f'step {i}')
    time.sleep(0.3)
print('a line', flush=True)
time.sleep(0.3)
print('end')`})
		reps := notes.of("reports")
		logNotes(t, "reporting call", reps)
		checkLiveNotes(t, "reporting call", reps)
		if isErr || text != "a line\nend" {
			t.Errorf("the call's result: %v %q", isErr, text)
		}
		for i, p := range []float64{10, 20, 30} {
			msg := fmt.Sprintf("step %d", i)
			if !slices.ContainsFunc(reps, func(n liveNote) bool { return n.message() == msg && n.Progress == p && n.total() == 100 }) {
				t.Errorf("report %q did not arrive as progress %v of 100", msg, p)
			}
		}
		if !slices.ContainsFunc(reps, func(n liveNote) bool { return strings.HasPrefix(n.message(), "a line") }) {
			t.Errorf("the output line was not sent as progress")
		}
	})
}

// TestKubeCancel: TestLiveGoClientCancel on pods, under runc and gVisor:
// a call cancelled by the client (notifications/cancelled) is interrupted
// where it was, the session keeps its state, and the next calls work.
func TestKubeCancel(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, _ testEngine, env []string, _ bool) {
		setKubeEnv(t, env)
		liveCancel(t, variant{label: engine.BackendKubernetes, engine: engine.BackendKubernetes})
	})
}

// TestKubeProxiedServer: code on a pod calls a proxied MCP server (the
// npm server-everything, run on the host) and the filesystem server, its
// state kept between calls, driven by the go-sdk client and by the
// official TypeScript SDK's client, under runc and gVisor.
func TestKubeProxiedServer(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, _ testEngine, env []string, _ bool) {
		home, shared := npmHome(t)
		writeFile(t, filepath.Join(shared, "notes.txt"), "hello from the host\n")
		calls := []map[string]any{
			{"code": "x = 7\nprint('set')"},
			{"servers": []string{"everything", "filesystem"}, "code": "s = await mcp_everything.get_sum(a=2, b=3)\n" +
				"print(x * 6, s, await mcp_everything.echo(message='from a pod'))\n" +
				"print(await mcp_filesystem.read_text_file(path=" + pyString(filepath.Join(shared, "notes.txt")) + "))"},
		}
		check := func(t *testing.T, texts []string, errs []bool) {
			t.Helper()
			if len(texts) != 2 || errs[0] || texts[0] != "set" || errs[1] || !strings.HasPrefix(texts[1], "42 ") || !strings.Contains(texts[1], "5") ||
				!strings.Contains(texts[1], "from a pod") || !strings.Contains(texts[1], "hello from the host") {
				t.Errorf("%q (isError %v)", texts, errs)
			}
		}
		t.Run("go-sdk", func(t *testing.T) {
			cs := connectBridge(t, engine.BackendKubernetes, append(env, "HOME="+home)...)
			var texts []string
			var errs []bool
			for _, c := range calls {
				text, isErr := runPython(t, cs, c)
				texts, errs = append(texts, text), append(errs, isErr)
			}
			check(t, texts, errs)
		})
		t.Run("typescript", func(t *testing.T) {
			setKubeEnv(t, env)
			var texts []string
			var errs []bool
			for _, r := range runTSClient(t, home, engine.BackendKubernetes, calls).Results {
				texts, errs = append(texts, r.Text), append(errs, r.IsError)
			}
			check(t, texts, errs)
		})
	})
}
