//go:build integration

package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// memoryProgram runs in the sandbox of TestSandboxMemoryOnRealEngines: it
// says "ready"; told "alloc", it allocates 64 MiB and writes to every
// page of it, then says "allocated"; told "exit", it exits with code 3.
const memoryProgram = `
import sys
print("ready", flush=True)
held = []
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "alloc":
        x = bytearray(64 << 20)
        for i in range(0, len(x), 4096):
            x[i] = 1
        held.append(x)
        print("allocated", flush=True)
    elif cmd == "exit":
        sys.exit(3)
`

// TestSandboxMemoryOnRealEngines reads a running sandbox's memory through
// each engine's stats, before and after it allocates 64 MiB, then once it
// has exited and once it is removed. MCP_BRIDGE_IMAGE names an image with
// python3.
func TestSandboxMemoryOnRealEngines(t *testing.T) {
	forEachRealEngine(t, time.Minute, func(ctx context.Context, t *testing.T, e engine.Engine, image string) {
		testSandboxMemory(ctx, t, e, engine.Spec{Image: image, Cmd: []string{"python3", "-c", memoryProgram}, Session: "memory-test"})
	})
}

func testSandboxMemory(ctx context.Context, t *testing.T, e engine.Engine, spec engine.Spec) {
	r, ok := e.(engine.MemoryReader)
	if !ok {
		t.Fatalf("%T is not a MemoryReader", e)
	}
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
	// read reads the sandbox's memory five times, three back to back,
	// then twice after a pause, logs how long each read took, and
	// returns the last figure. (Docker's daemon samples the stats of
	// the containers someone waits for once a second: a read right
	// after another waits for the next round.)
	read := func(what string) int64 {
		t.Helper()
		var n int64
		var times []time.Duration
		var figures []string
		for i := range 5 {
			if i >= 3 {
				time.Sleep(1500 * time.Millisecond)
			}
			start := time.Now()
			n, err = r.SandboxMemory(ctx, "", sb.ID())
			if err != nil {
				t.Fatalf("SandboxMemory, %s: %v", what, err)
			}
			times = append(times, time.Since(start).Round(100*time.Microsecond))
			figures = append(figures, mibOf(n))
		}
		t.Logf("SandboxMemory, %s: %s; took %v (the last two 1.5 s after the one before)", what, strings.Join(figures, ", "), times)
		return n
	}
	expect("ready")
	before := read("idle")
	if before <= 0 {
		t.Errorf("SandboxMemory of a running Python: %d bytes", before)
	}
	if n, err := r.SandboxMemory(ctx, "", lifecycle.ShortID(sb.ID())); err != nil || n <= 0 {
		t.Errorf("SandboxMemory(%s), the ID's prefix: %d, %v", lifecycle.ShortID(sb.ID()), n, err)
	}
	if _, err := r.SandboxMemory(ctx, "elsewhere", sb.ID()); !errors.Is(err, engine.ErrOtherEngine) {
		t.Errorf("SandboxMemory on engine \"elsewhere\": %v, want ErrOtherEngine", err)
	}

	if _, err := io.WriteString(sb.Stdin(), "alloc\n"); err != nil {
		t.Fatal(err)
	}
	expect("allocated")
	after := read("after allocating 64 MiB")
	t.Logf("grew by %s", mibOf(after-before))
	if after < before+48<<20 {
		t.Errorf("SandboxMemory after allocating 64 MiB: %s, first %s: want at least 48 MiB more", mibOf(after), mibOf(before))
	}

	// Exited, not removed yet.
	if _, err := io.WriteString(sb.Stdin(), "exit\n"); err != nil {
		t.Fatal(err)
	}
	if st, err := sb.Wait(ctx); err != nil || st.Code != 3 {
		t.Fatalf("Wait = %+v, %v; want code 3", st, err)
	}
	_, err = r.SandboxMemory(ctx, "", sb.ID())
	var exited *engine.ExitedError
	if !errors.As(err, &exited) || exited.Code != 3 {
		t.Errorf("SandboxMemory of an exited sandbox: %v, want ErrSandboxExited with code 3", err)
	} else {
		t.Logf("exited: %v", err)
	}

	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	<-drained
	_, err = r.SandboxMemory(ctx, "", sb.ID())
	if !errors.Is(err, engine.ErrNoSandbox) && !errors.Is(err, engine.ErrSandboxExited) {
		t.Errorf("SandboxMemory of a removed sandbox: %v, want ErrNoSandbox or ErrSandboxExited", err)
	} else {
		t.Logf("removed: %v", err)
	}
}

func mibOf(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
