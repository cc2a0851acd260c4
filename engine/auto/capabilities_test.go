package auto

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A capableBackend is a backend with the optional capabilities a test
// reaches through an Auto or a Multi: it describes itself, reads memory
// and resumes sandboxes, refusing engine names as a single engine does.
type capableBackend struct {
	fakeMember
	memory int64
}

func (c *capableBackend) Name() string { return c.name }

func (c *capableBackend) Describe(context.Context) (engine.Info, error) {
	return engine.Info{Backend: c.name, Version: "20.10.24"}, nil
}

func (c *capableBackend) HasImage(context.Context, string) (bool, error) { return true, nil }
func (c *capableBackend) PullImage(context.Context, string) error        { return nil }

func (c *capableBackend) named(engineName string) error {
	if engineName != "" {
		return fmt.Errorf("%w: %q names an engine, and this bridge has one, unnamed", engine.ErrOtherEngine, engineName)
	}
	return nil
}

func (c *capableBackend) SandboxMemory(_ context.Context, engineName, ref string) (int64, error) {
	return c.memory, c.named(engineName)
}

func (c *capableBackend) Resume(_ context.Context, engineName, ref string, _ []string) (engine.Sandbox, error) {
	if err := c.named(engineName); err != nil {
		return nil, err
	}
	return &fakeSandbox{id: ref}, nil
}

func (c *capableBackend) RemoveSandbox(_ context.Context, engineName, _ string) error {
	return c.named(engineName)
}

var (
	_ engine.Describer    = (*capableBackend)(nil)
	_ engine.MemoryReader = (*capableBackend)(nil)
	_ engine.Resumer      = (*capableBackend)(nil)
)

// TestAutoDescribesItsBackend: an Auto's backend is described through
// engine.As, which connects it; with no engine, As fails as Start does.
func TestAutoDescribesItsBackend(t *testing.T) {
	a := New(&engine.AutoOptions{Backend: engine.BackendDocker})
	a.docker = func(context.Context) (backend, error) {
		return &capableBackend{fakeMember: fakeMember{name: "docker"}}, nil
	}
	defer a.Close()
	ctx := context.Background()
	d, err := engine.As[engine.Describer](ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := d.Describe(ctx); err != nil || info.Backend != engine.BackendDocker || info.Version != "20.10.24" {
		t.Fatalf("Describe: %+v, %v", info, err)
	}
	if !engine.MayBe[engine.Describer](a) || engine.MayBe[engine.Describer](&fakeBackend{"plain"}) {
		t.Error("MayBe: an Auto may be a Describer, a plain backend is none")
	}

	dead := New(&engine.AutoOptions{Backend: engine.BackendDocker})
	dead.docker = func(context.Context) (backend, error) { return nil, errors.New("connection refused") }
	if _, err := engine.As[engine.Describer](ctx, dead); !errors.Is(err, engine.ErrNoEngine) {
		t.Fatalf("As with no engine: %v; want ErrNoEngine", err)
	}
}

// TestAutoSandboxMemory: a capability that takes an engine name reaches
// an Auto's backend with the name; a backend without it is unsupported.
func TestAutoSandboxMemory(t *testing.T) {
	ctx := context.Background()
	a := New(&engine.AutoOptions{Backend: engine.BackendDocker})
	a.docker = func(context.Context) (backend, error) {
		return &capableBackend{fakeMember: fakeMember{name: "docker"}, memory: 8192}, nil
	}
	if got, err := engine.SandboxMemory(ctx, a, "", "c1"); err != nil || got != 8192 {
		t.Fatalf("SandboxMemory = %d, %v; want 8192", got, err)
	}
	if _, err := engine.SandboxMemory(ctx, a, "east", "c1"); !errors.Is(err, engine.ErrOtherEngine) {
		t.Errorf("SandboxMemory on engine \"east\": %v, want ErrOtherEngine", err)
	}
	var calls []string
	plain := fakeAuto(engine.BackendDocker, nil, nil, &calls)
	if _, err := engine.SandboxMemory(ctx, plain, "", "c1"); !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "the docker engine is no MemoryReader") {
		t.Errorf("SandboxMemory on a backend that cannot: %v", err)
	}
}

// TestMultiRoutesByEngineName: what acts on one sandbox goes to the
// member its engine name names; a sandbox resumed there names it.
func TestMultiRoutesByEngineName(t *testing.T) {
	ctx := context.Background()
	m, _, _ := newTestMulti("west")
	east := &capableBackend{fakeMember: fakeMember{name: "east"}, memory: 4096}
	m.members = append(m.members, &member{name: "east", eng: east})
	if got, err := engine.SandboxMemory(ctx, m, "east", "c1"); err != nil || got != 4096 {
		t.Fatalf("SandboxMemory on east = %d, %v; want 4096", got, err)
	}
	if _, err := engine.SandboxMemory(ctx, m, "north", "c1"); !errors.Is(err, engine.ErrOtherEngine) {
		t.Errorf("SandboxMemory on an engine none of the bridge's: %v, want ErrOtherEngine", err)
	}
	if _, err := engine.SandboxMemory(ctx, m, "", "c1"); !errors.Is(err, engine.ErrOtherEngine) {
		t.Errorf("SandboxMemory on no engine name with several engines: %v, want ErrOtherEngine", err)
	}
	if _, err := engine.SandboxMemory(ctx, m, "west", "c1"); !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "engine west") {
		t.Errorf("SandboxMemory on an engine that cannot read memory: %v", err)
	}
	sb, err := engine.Resume(ctx, m, "east", "c1", []string{"relay"})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := sb.(interface{ Engine() string }); !ok || p.Engine() != "east" || sb.ID() != "c1" {
		t.Errorf("resumed sandbox %T %q: want c1, naming engine east", sb, sb.ID())
	}
	if err := engine.RemoveSandbox(ctx, m, "east", "c1"); err != nil {
		t.Errorf("RemoveSandbox on east: %v", err)
	}
	if _, err := engine.Resume(ctx, m, "west", "c1", nil); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Resume on an engine that cannot: %v", err)
	}
}
