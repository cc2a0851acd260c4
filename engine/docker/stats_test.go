package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// statsBody returns the Engine API's stats of a container whose
// memory_stats are memoryStats, among the other sections a daemon sends.
func statsBody(memoryStats string) string {
	return `{"read":"2026-11-26T16:00:00Z","pids_stats":{"current":3},` +
		`"cpu_stats":{"cpu_usage":{"total_usage":1234}},"memory_stats":` + memoryStats + `}`
}

func TestDockerMemoryArithmetic(t *testing.T) {
	const mi = 1 << 20
	for _, c := range []struct {
		name, body string
		want       int64
	}{
		{"cgroup v1: total_inactive_file, not inactive_file",
			statsBody(fmt.Sprintf(`{"usage":%d,"limit":1073741824,"stats":{"cache":%d,"inactive_file":%d,"total_inactive_file":%d,"rss":%d}}`, 100*mi, 40*mi, 5*mi, 30*mi, 60*mi)),
			70 * mi},
		{"cgroup v2: inactive_file",
			statsBody(fmt.Sprintf(`{"usage":%d,"limit":1073741824,"stats":{"anon":%d,"file":%d,"inactive_file":%d}}`, 100*mi, 60*mi, 40*mi, 25*mi)),
			75 * mi},
		{"no inactive file reported", statsBody(`{"usage":4096,"stats":{}}`), 4096},
		{"no stats map", statsBody(`{"usage":4096}`), 4096},
		{"inactive file above usage: 0, not negative", statsBody(`{"usage":4096,"stats":{"inactive_file":8192}}`), 0},
		{"cgroup v1, inactive file equal to usage", statsBody(`{"usage":4096,"stats":{"total_inactive_file":4096}}`), 0},
		{"usage 0", statsBody(`{"usage":0,"stats":{"inactive_file":0}}`), 0},
		{"trailing newline, as the daemon writes it", statsBody(`{"usage":4096}`) + "\n", 4096},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := dockerMemory(strings.NewReader(c.body))
			if err != nil || got != c.want {
				t.Fatalf("dockerMemory = %d, %v; want %d", got, err, c.want)
			}
		})
	}
}

func TestDockerMemoryRefusesBadStats(t *testing.T) {
	padding := strings.Repeat("a", maxStatsBytes)
	for _, c := range []struct {
		name, body, want string
	}{
		{"empty", "", "decoding the engine's stats: EOF"},
		{"not JSON", "<html>bad gateway</html>", "decoding the engine's stats"},
		{"truncated", `{"memory_stats":{"usage":40`, "decoding the engine's stats"},
		{"two objects", statsBody(`{"usage":4096}`) + statsBody(`{"usage":1}`), "data after the object"},
		{"garbage after the object", statsBody(`{"usage":4096}`) + "}", "data after the object"},
		{"no memory_stats (a stopped container's)", `{"read":"0001-01-01T00:00:00Z"}`, "no memory usage"},
		{"memory_stats null", statsBody(`null`), "no memory usage"},
		{"memory_stats empty", statsBody(`{}`), "no memory usage"},
		{"negative usage", statsBody(`{"usage":-1}`), "decoding the engine's stats"},
		{"fractional usage", statsBody(`{"usage":1.5}`), "decoding the engine's stats"},
		{"usage a string", statsBody(`{"usage":"4096"}`), "decoding the engine's stats"},
		{"negative inactive file", statsBody(`{"usage":4096,"stats":{"inactive_file":-1}}`), "decoding the engine's stats"},
		{"usage beyond int64", statsBody(`{"usage":18446744073709551615}`), "implausible memory usage"},
		{"usage beyond uint64", statsBody(`{"usage":18446744073709551616}`), "decoding the engine's stats"},
		{"oversized", `{"memory_stats":{"usage":4096},"padding":"` + padding + `"}`, "the engine's stats exceed 1048576 bytes"},
		{"oversized and endless", "", "the engine's stats exceed 1048576 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r io.Reader = strings.NewReader(c.body)
			if c.name == "oversized and endless" {
				r = endless{}
			}
			got, err := dockerMemory(r)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("dockerMemory = %d, %v; want an error saying %q", got, err, c.want)
			}
			t.Logf("%v", err)
		})
	}
	// Exactly maxStatsBytes is read whole.
	body := statsBody(`{"usage":4096}`)
	prefix := body[:len(body)-1] + `,"padding":"`
	body = prefix + strings.Repeat("a", maxStatsBytes-len(prefix)-len(`"}`)) + `"}`
	if len(body) != maxStatsBytes {
		t.Fatalf("the body has %d bytes", len(body))
	}
	if got, err := dockerMemory(strings.NewReader(body)); err != nil || got != 4096 {
		t.Fatalf("dockerMemory of %d bytes = %d, %v", len(body), got, err)
	}
}

// An endless reader is an endless body of spaces.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// startMemory starts a sandbox that runs until closed on a fake daemon
// whose stats are stats.
func startMemory(t *testing.T, stats string) (*fakeDocker, *Docker, engine.Sandbox) {
	t.Helper()
	f := newFakeDocker(t)
	f.program = func(ctx context.Context, _ io.Reader, _, _ io.Writer) int {
		<-ctx.Done()
		return 137
	}
	f.stats = stats
	d := newTestDocker(t, f, nil)
	return f, d, mustStart(t, d)
}

func TestDockerSandboxMemory(t *testing.T) {
	ctx := context.Background()
	f, d, sb := startMemory(t, statsBody(`{"usage":73400320,"stats":{"total_inactive_file":4194304}}`))
	if got, err := d.SandboxMemory(ctx, "", sb.ID()); err != nil || got != 69206016 {
		t.Fatalf("SandboxMemory = %d, %v; want 69206016", got, err)
	}
	// The sandbox's own wait runs beside the read and may be logged
	// at any point: the read's calls are the others.
	var calls []string
	for _, c := range f.Calls() {
		if !strings.HasPrefix(c, "ContainerWait ") {
			calls = append(calls, c)
		}
	}
	if len(calls) < 2 || calls[len(calls)-2] != "ContainerInspect "+sb.ID() || calls[len(calls)-1] != "ContainerStatsOneShot "+sb.ID() {
		t.Errorf("calls end with %q, want the inspection, then the stats", calls[max(0, len(calls)-2):])
	}

	if _, err := d.SandboxMemory(ctx, "east", sb.ID()); !errors.Is(err, engine.ErrOtherEngine) {
		t.Errorf("SandboxMemory on engine \"east\" of a bridge with one engine: %v, want ErrOtherEngine", err)
	}
	if _, err := d.SandboxMemory(ctx, "", "0123456789ab"); !errors.Is(err, engine.ErrNoSandbox) {
		t.Errorf("SandboxMemory of no container: %v, want ErrNoSandbox", err)
	}
	// A container that is not the bridge's: its labels say so.
	f.mu.Lock()
	f.containers["foreign"] = &fakeContainer{id: "foreign", cfg: nil, started: true, cancel: func() {}, exited: make(chan struct{})}
	f.mu.Unlock()
	if _, err := d.SandboxMemory(ctx, "", "foreign"); !errors.Is(err, engine.ErrNoSandbox) || !strings.Contains(err.Error(), "not a sandbox of this bridge") {
		t.Errorf("SandboxMemory of a container not the bridge's: %v, want ErrNoSandbox", err)
	}
	for _, c := range f.Calls() {
		if c == "ContainerStatsOneShot foreign" {
			t.Errorf("the stats of a container not the bridge's were read")
		}
	}

	// Stats the backend cannot read: an error, not ErrNoSandbox.
	f.mu.Lock()
	f.stats = "{"
	f.mu.Unlock()
	if _, err := d.SandboxMemory(ctx, "", sb.ID()); err == nil || errors.Is(err, engine.ErrNoSandbox) || errors.Is(err, engine.ErrSandboxExited) ||
		!strings.Contains(err.Error(), "reading a sandbox's memory: sandbox ") || !strings.Contains(err.Error(), "decoding the engine's stats") {
		t.Errorf("SandboxMemory with malformed stats: %v", err)
	} else {
		t.Logf("malformed stats: %v", err)
	}
	f.setFail(func(method, _ string) error {
		if method == "ContainerStatsOneShot" {
			return errors.New("Error response from daemon: stats unavailable")
		}
		return nil
	})
	if _, err := d.SandboxMemory(ctx, "", sb.ID()); err == nil || !strings.Contains(err.Error(), "stats unavailable") {
		t.Errorf("SandboxMemory with failing stats: %v", err)
	}

	// Removed between the inspection and the stats: ErrNoSandbox.
	f.setFail(func(method, id string) error {
		if method == "ContainerStatsOneShot" {
			f.exit(f.containers[id], 137) // f.mu is held
			delete(f.containers, id)
			return fmt.Errorf("no such container: %s", id)
		}
		return nil
	})
	if _, err := d.SandboxMemory(ctx, "", sb.ID()); !errors.Is(err, engine.ErrNoSandbox) {
		t.Errorf("SandboxMemory of a sandbox removed meanwhile: %v, want ErrNoSandbox", err)
	}
}

func TestDockerSandboxMemoryExited(t *testing.T) {
	ctx := context.Background()
	f, d, sb := startMemory(t, statsBody(`{}`))
	f.mu.Lock()
	f.exit(f.containers[sb.ID()], 0)
	f.mu.Unlock()
	_, err := d.SandboxMemory(ctx, "", sb.ID())
	var exited *engine.ExitedError
	if !errors.Is(err, engine.ErrSandboxExited) || !errors.As(err, &exited) || exited.Code != 0 {
		t.Fatalf("SandboxMemory of an exited sandbox: %v, want ErrSandboxExited with code 0", err)
	}
	// Exited between the inspection and the stats, which then hold no
	// memory usage, as a stopped container's do.
	f2, d2, sb2 := startMemory(t, statsBody(`{}`))
	f2.setFail(func(method, id string) error {
		if method == "ContainerStatsOneShot" {
			f2.exit(f2.containers[id], engine.ExitIdle) // f2.mu is held
		}
		return nil
	})
	if _, err := d2.SandboxMemory(ctx, "", sb2.ID()); !errors.As(err, &exited) || exited.Code != engine.ExitIdle {
		t.Fatalf("SandboxMemory of a sandbox that exited meanwhile: %v, want ErrSandboxExited with code %d", err, engine.ExitIdle)
	}
}
