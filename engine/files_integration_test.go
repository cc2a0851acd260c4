//go:build integration

package engine_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/docker"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/podman"
)

// filesProgram runs in the sandbox of TestFilesOnRealEngines. It leaves in
// OutDir a file, a 1 KiB file small.txt, a file in a subdirectory, a hard
// link, a link to /etc/passwd and one to /etc with a report of the
// mounts, says "ready", then, told "check" on stdin, reports what the host
// put in InDir, writes the 20 MiB file 0big.bin (sorting before the
// others), says "checked", and sleeps until stopped.
const filesProgram = `
import json, os, sys, time

def stat(p):
    try:
        st = os.lstat(p)
        return {"uid": st.st_uid, "gid": st.st_gid, "mode": oct(st.st_mode & 0o7777)}
    except OSError as e:
        return {"error": e.strerror}

def write(p):
    try:
        with open(p, "w") as f:
            f.write("x")
        return "written"
    except OSError as e:
        return "denied: " + e.strerror

def report(name, r):
    with open("/workspace/out/" + name, "w") as f:
        json.dump(r, f)

with open("/workspace/out/a.txt", "w") as f:
    f.write("hello from the sandbox\n")
with open("/workspace/out/small.txt", "w") as f:
    f.write("s" * 1024)
os.mkdir("/workspace/out/real")
with open("/workspace/out/real/deep.txt", "w") as f:
    f.write("deep\n")
os.link("/workspace/out/a.txt", "/workspace/out/hard")
os.symlink("/etc/passwd", "/workspace/out/link")
os.symlink("/etc", "/workspace/out/sub")
with open("/proc/mounts") as f:
    mounts = [l.split()[1:4] for l in f if l.split()[1].startswith("/workspace")]
report("mounts.json", {
    "mounts": mounts,
    "out": stat("/workspace/out"), "in": stat("/workspace/in"),
    "write_out": write("/workspace/out/w"), "write_in": write("/workspace/in/mine"),
})
print("ready", flush=True)
sys.stdin.readline()
report("check.json", {
    "given": stat("/workspace/in/given.txt"),
    "write_given": write("/workspace/in/given.txt"),
    "write_in": write("/workspace/in/mine"),
})
with open("/workspace/out/0big.bin", "wb") as f:
    f.write(b"b" * (20 << 20))
print("checked", flush=True)
time.sleep(120)
`

// A mountsReport is the first report of filesProgram.
type mountsReport struct {
	Mounts   [][]string
	Out, In  fileStat
	WriteOut string `json:"write_out"`
	WriteIn  string `json:"write_in"`
}

// A checkReport is the second report of filesProgram.
type checkReport struct {
	Given      fileStat
	WriteGiven string `json:"write_given"`
	WriteIn    string `json:"write_in"`
}

// A fileStat is a file's owner and mode as filesProgram reports them.
type fileStat struct {
	UID, GID int
	Mode     string
	Error    string
}

// realEngines returns the engines this test can reach: Docker and Podman
// (compiled in with PodmanBuildTags). An engine named in MCP_TEST_ENGINES
// must be reachable; others are skipped when they are not.
func realEngines(t *testing.T) map[string]func(context.Context) (engine.Engine, func() error, error) {
	t.Helper()
	return map[string]func(context.Context) (engine.Engine, func() error, error){
		engine.BackendDocker: func(ctx context.Context) (engine.Engine, func() error, error) {
			d, err := docker.New(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			return d, d.Close, nil
		},
		engine.BackendPodman: func(ctx context.Context) (engine.Engine, func() error, error) {
			p, err := podman.New(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			return p, p.Close, nil
		},
	}
}

// TestFilesOnRealEngines reads and writes a sandbox's file-exchange
// directories through each engine's archive API. MCP_BRIDGE_IMAGE names
// an image with python3.
func TestFilesOnRealEngines(t *testing.T) {
	forEachRealEngine(t, 30*time.Second, func(ctx context.Context, t *testing.T, e engine.Engine, image string) {
		testFiles(ctx, t, e, engine.Spec{Image: image, Cmd: []string{"python3", "-c", filesProgram}, InBytes: 1 << 20, Session: "files-test"})
	})
}

// forEachRealEngine runs f as a subtest on Docker and on Podman, each
// connected for it and closed after, within timeout, with the image of
// MCP_BRIDGE_IMAGE (skipped when unset). An engine named in
// MCP_TEST_ENGINES must be reachable; another is skipped when it is not.
func forEachRealEngine(t *testing.T, timeout time.Duration, f func(ctx context.Context, t *testing.T, e engine.Engine, image string)) {
	image := os.Getenv("MCP_BRIDGE_IMAGE")
	if image == "" {
		t.Skip("MCP_BRIDGE_IMAGE is not set")
	}
	required := strings.Split(os.Getenv("MCP_TEST_ENGINES"), ",")
	for _, name := range []string{engine.BackendDocker, engine.BackendPodman} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			e, closeEngine, err := realEngines(t)[name](ctx)
			if err != nil {
				if slices.Contains(required, name) {
					t.Fatalf("%s is required (MCP_TEST_ENGINES): %v", name, err)
				}
				t.Skipf("%s unavailable: %v", name, err)
			}
			defer closeEngine()
			f(ctx, t, e, image)
		})
	}
}

func testFiles(ctx context.Context, t *testing.T, e engine.Engine, spec engine.Spec) {
	sb, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	var stderr bytes.Buffer
	drained := make(chan struct{})
	go func() { io.Copy(&stderr, sb.Stderr()); close(drained) }()
	stdout := bufio.NewReader(sb.Stdout())
	expect := func(want string) {
		t.Helper()
		line, err := stdout.ReadString('\n')
		if strings.TrimSpace(line) != want {
			sb.Close()
			<-drained
			t.Fatalf("sandbox said %q (%v), want %q; stderr:\n%s", line, err, want, stderr.String())
		}
	}
	files := sb.(engine.Files)
	readIn := func(root, rel string) (string, error) {
		t.Helper()
		rc, size, err := files.OpenFile(ctx, root, rel, 1<<20)
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err == nil && int64(len(b)) != size {
			t.Errorf("OpenFile(%s, %s): size %d, read %d bytes", root, rel, size, len(b))
		}
		return string(b), err
	}
	read := func(rel string) (string, error) {
		t.Helper()
		return readIn(engine.OutDir, rel)
	}
	readJSON := func(rel string, v any) {
		t.Helper()
		s, err := read(rel)
		if err != nil {
			t.Fatalf("OpenFile(%s): %v", rel, err)
		}
		if err := json.Unmarshal([]byte(s), v); err != nil {
			t.Fatalf("%s: %v: %s", rel, err, s)
		}
	}
	// timeSmall times reading small.txt (1 KiB), a few times.
	timeSmall := func(what string) {
		t.Helper()
		var times []time.Duration
		for range 5 {
			start := time.Now()
			got, err := read("small.txt")
			if err != nil || len(got) != 1024 {
				t.Fatalf("OpenFile(small.txt) = %d bytes, %v", len(got), err)
			}
			times = append(times, time.Since(start).Round(10*time.Microsecond))
		}
		t.Logf("OpenFile(small.txt), %s: %v", what, times)
	}
	expect("ready")

	// The engine's archive: names of the form out/…, links as links.
	if cs, ok := sb.(*lifecycle.Sandbox); ok {
		rc, err := cs.Archive(ctx, engine.OutDir)
		if err != nil {
			t.Fatalf("copyOut(%s): %v", engine.OutDir, err)
		}
		var names []string
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("reading the archive of %s: %v", engine.OutDir, err)
			}
			name := fmt.Sprintf("%s (%c)", h.Name, h.Typeflag)
			if h.Linkname != "" {
				name += " -> " + h.Linkname
			}
			names = append(names, name)
			if first, _, _ := strings.Cut(path.Clean(h.Name), "/"); first != path.Base(engine.OutDir) {
				t.Errorf("the archive of %s holds %q", engine.OutDir, h.Name)
			}
		}
		rc.Close()
		t.Logf("the archive of %s: %s", engine.OutDir, strings.Join(names, ", "))
	}

	if got, err := read("a.txt"); err != nil || got != "hello from the sandbox\n" {
		t.Errorf("OpenFile(a.txt) = %q, %v", got, err)
	}
	if got, err := read("real/deep.txt"); err != nil || got != "deep\n" {
		t.Errorf("OpenFile(real/deep.txt) = %q, %v", got, err)
	}
	for _, rel := range []string{"link", "sub", "real"} {
		if _, err := read(rel); !errors.Is(err, engine.ErrNotRegular) {
			t.Errorf("OpenFile(%s): %v, want ErrNotRegular", rel, err)
		} else {
			t.Logf("OpenFile(%s): %v", rel, err)
		}
	}
	// sub is a link to /etc: the archive of OutDir holds the link, not
	// /etc's files.
	if got, err := read("sub/passwd"); err == nil {
		t.Fatalf("OpenFile(sub/passwd), sub a link to /etc: read /etc/passwd (%d bytes)", len(got))
	} else if !errors.Is(err, engine.ErrNotRegular) {
		t.Errorf("OpenFile(sub/passwd), sub a link to /etc: %v, want ErrNotRegular", err)
	} else {
		t.Logf("OpenFile(sub/passwd): %v", err)
	}
	// hard and a.txt are one file: the engine archives the second it
	// meets as a hard link to the first.
	if got, err := read("hard"); err == nil && got != "hello from the sandbox\n" || err != nil && !errors.Is(err, engine.ErrNotRegular) {
		t.Errorf("OpenFile(hard) = %q, %v", got, err)
	} else {
		t.Logf("OpenFile(hard), a hard link to a.txt: %q, %v", got, err)
	}
	for _, rel := range []string{"missing", "real/missing", "a.txt/x"} {
		if _, err := read(rel); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("OpenFile(%s): %v, want fs.ErrNotExist", rel, err)
		} else {
			t.Logf("OpenFile(%s): %v", rel, err)
		}
	}
	if _, err := readIn(lifecycle.WorkspaceDir+"/nowhere", "a.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenFile under a missing directory: %v, want fs.ErrNotExist", err)
	}
	if _, _, err := files.OpenFile(ctx, engine.OutDir, "a.txt", 4); !errors.Is(err, engine.ErrFileTooLarge) {
		t.Errorf("OpenFile(a.txt) with a limit of 4 bytes: %v, want ErrFileTooLarge", err)
	}
	timeSmall("without 0big.bin")

	var m mountsReport
	readJSON("mounts.json", &m)
	t.Logf("mounts: %v; out %+v, in %+v", m.Mounts, m.Out, m.In)
	order := make([]string, len(m.Mounts))
	for i, mt := range m.Mounts {
		order[i] = mt[0]
	}
	if !slices.Equal(order, []string{lifecycle.WorkspaceDir, engine.OutDir, engine.InDir}) && !slices.Equal(order, []string{lifecycle.WorkspaceDir, engine.InDir, engine.OutDir}) {
		t.Errorf("mounts under /workspace: %v, want /workspace, then the file-exchange directories", order)
	}
	for _, mt := range m.Mounts {
		if opts := strings.Split(mt[2], ","); mt[0] != lifecycle.WorkspaceDir && (!slices.Contains(opts, "noexec") || !slices.Contains(opts, "nosuid") || !slices.Contains(opts, "nodev")) {
			t.Errorf("%s mounted %s, want noexec,nosuid,nodev", mt[0], mt[2])
		}
	}
	if m.Out.Mode != "0o700" && m.Out.Mode != "0o1777" || m.Out.Mode == "0o700" && m.Out.UID != 65534 {
		t.Errorf("%s: %+v, want the sandbox's (0700) or anyone's (1777)", engine.OutDir, m.Out)
	}
	if m.In.UID != 0 || m.In.Mode != "0o755" {
		t.Errorf("%s: %+v, want root's, 0755", engine.InDir, m.In)
	}
	if m.WriteOut != "written" || !strings.HasPrefix(m.WriteIn, "denied") {
		t.Errorf("the sandbox writing in %s: %s, in %s: %s", engine.OutDir, m.WriteOut, engine.InDir, m.WriteIn)
	}

	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	tw.WriteHeader(&tar.Header{Name: "given.txt", Typeflag: tar.TypeReg, Mode: 0o444, Size: 14, Uid: 0, Gid: 0, ModTime: time.Now()})
	io.WriteString(tw, "from the host\n")
	tw.Close()
	if err := files.CopyIn(ctx, engine.InDir, &in); err != nil {
		t.Fatalf("CopyIn: %v", err)
	}
	if err := files.CopyIn(ctx, lifecycle.WorkspaceDir+"/nowhere", strings.NewReader("")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CopyIn into a missing directory: %v, want fs.ErrNotExist", err)
	}
	if got, err := readIn(engine.InDir, "given.txt"); err != nil || got != "from the host\n" {
		t.Errorf("OpenFile(given.txt) = %q, %v", got, err)
	}
	if _, err := io.WriteString(sb.Stdin(), "check\n"); err != nil {
		t.Fatal(err)
	}
	expect("checked")
	var c checkReport
	readJSON("check.json", &c)
	if c.Given.UID != 0 || c.Given.GID != 0 || c.Given.Mode != "0o444" {
		t.Errorf("given.txt in the sandbox: %+v, want root's, 0444", c.Given)
	}
	if !strings.HasPrefix(c.WriteGiven, "denied") || !strings.HasPrefix(c.WriteIn, "denied") {
		t.Errorf("the sandbox writing given.txt: %s, a new file in %s: %s", c.WriteGiven, engine.InDir, c.WriteIn)
	}

	if _, _, err := files.OpenFile(ctx, engine.OutDir, "0big.bin", 1<<20); !errors.Is(err, engine.ErrFileTooLarge) {
		t.Errorf("OpenFile(0big.bin) with a limit of 1 MiB: %v, want ErrFileTooLarge", err)
	}
	timeSmall("after the 20 MiB 0big.bin")

	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	<-drained
	if _, _, err := files.OpenFile(ctx, engine.OutDir, "a.txt", 0); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("OpenFile after Close: %v, want ErrClosed", err)
	}
}
