//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/kube"
)

// TestKubeInputDir: MCP_BRIDGE_INPUT_DIR on pods, under runc and gVisor.
// The pod's input container fills /workspace/in before the runtime
// starts; the code reads the files and can neither change them nor add
// any (the sandbox's container mounts the directory read-only).
func TestKubeInputDir(t *testing.T) {
	in := t.TempDir()
	if err := os.MkdirAll(filepath.Join(in, "nested"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(in, "data.csv"), []byte("a,b\n1,2\n"), 0o600)
	os.WriteFile(filepath.Join(in, "nested", "notes.txt"), bytes.Repeat([]byte("n"), 3000), 0o600)
	forEachKubeClass(t, func(t *testing.T, _ testEngine, env []string, _ bool) {
		// A first call without the input, before and after one with it,
		// for the cost of the input container.
		bare := func() time.Duration {
			began := time.Now()
			if text, isErr := runPython(t, connectBridge(t, engine.BackendKubernetes, env...), map[string]any{"code": "print(1)"}); isErr || text != "1" {
				t.Fatalf("a first call without input: %q", text)
			}
			return time.Since(began)
		}
		before := bare()
		cs := connectBridge(t, engine.BackendKubernetes, append(env, "MCP_BRIDGE_INPUT_DIR="+in)...)
		began := time.Now()
		text, isErr := runPython(t, cs, map[string]any{"code": `import os
print(open("/workspace/in/data.csv").read().strip())
print(len(open("/workspace/in/nested/notes.txt").read()))
for p in ("/workspace/in/data.csv", "/workspace/in/new.txt", "/workspace/in/nested/new.txt"):
    try:
        open(p, "a").write("x")
        print("wrote", p)
    except OSError as e:
        print("refused", e.errno in (13, 30))
for f in (lambda: os.chmod("/workspace/in/data.csv", 0o644), lambda: os.remove("/workspace/in/data.csv"), lambda: os.rename("/workspace/in/nested", "/workspace/in/moved")):
    try:
        f()
        print("changed")
    except OSError as e:
        print("refused", e.errno in (13, 30))`})
		withInput := time.Since(began)
		want := "a,b\n1,2\n3000\n" + strings.Repeat("refused True\n", 6)
		if isErr || text != strings.TrimSpace(want) {
			t.Fatalf("the input directory from inside: %q (isError %v)", text, isErr)
		}
		after := bare()
		t.Logf("first call: %v and %v without input, %v with the input container", before.Round(time.Millisecond), after.Round(time.Millisecond), withInput.Round(time.Millisecond))
	})
}

// TestKubeInputRefused: an input the input container cannot extract (a
// name with "..", more than its mount holds) fails the start with the
// extractor's error, and no pod is left.
func TestKubeInputRefused(t *testing.T) {
	kubeRequired(t)
	for _, kv := range kubeVariants() {
		class := kv.class
		t.Run(kv.label, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			k, err := kube.New(ctx, &engine.KubernetesOptions{Namespace: os.Getenv("MCP_BRIDGE_K8S_NAMESPACE"), RuntimeClass: class, Logger: testLogger()})
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			tarOf := func(name string, size int) func(io.Writer) error {
				return func(w io.Writer) error {
					tw := tar.NewWriter(w)
					tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o444, Size: int64(size)})
					tw.Write(bytes.Repeat([]byte("x"), size))
					return tw.Close()
				}
			}
			for _, tc := range []struct {
				name  string
				input func(io.Writer) error
				want  string
			}{
				{"dot-dot", tarOf("../escaped", 10), "refused entry '../escaped'"},
				{"over the mount", tarOf("big", 3<<20), "No space left on device"},
				{"a writer that fails", func(w io.Writer) error { tarOf("a", 10)(w); return errors.New("the file changed") }, "the file changed"},
			} {
				sb, err := k.Start(ctx, engine.Spec{Image: os.Getenv("MCP_BRIDGE_IMAGE"), Cmd: []string{"python3", "-c", "import sys; sys.stdin.read()"}, InBytes: 1 << 20, Input: tc.input, Session: "input-refused"})
				if err == nil {
					sb.Close()
					t.Errorf("%s: the sandbox started", tc.name)
					continue
				}
				if !strings.Contains(err.Error(), tc.want) || ctx.Err() != nil {
					t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
				}
				t.Logf("%s: %v", tc.name, err)
			}
			list, err := k.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range list {
				if p.Labels[engine.LabelSession] == "input-refused" && p.State != "removing" {
					t.Errorf("pod %s (%s) was left", p.ID, p.State)
				}
			}
		})
	}
}
