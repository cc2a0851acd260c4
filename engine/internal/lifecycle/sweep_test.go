package lifecycle

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// listAPI is an API whose engine holds containers: List lists them and
// Remove records what it removes; nothing else is called.
type listAPI struct {
	API
	containers []engine.SandboxInfo
	removed    []string
}

func (l *listAPI) List(context.Context) ([]engine.SandboxInfo, error) { return l.containers, nil }
func (l *listAPI) Remove(_ context.Context, id string) error {
	l.removed = append(l.removed, id)
	return nil
}

// TestSweepExited: the ended persistent sandboxes of the key are removed,
// whether the engine says exited, dead or (Podman, before its clean-up)
// stopped; running, stopping and created ones, and those of another key
// or none, are kept.
func TestSweepExited(t *testing.T) {
	of := func(id, key, state string) engine.SandboxInfo {
		return engine.SandboxInfo{ID: id, State: state, Labels: map[string]string{engine.LabelResumable: key}}
	}
	api := &listAPI{containers: []engine.SandboxInfo{
		of("exited", "k", "exited"), of("dead", "k", "dead"), of("stopped", "k", "stopped"),
		of("running", "k", "running"), of("stopping", "k", "stopping"), of("created", "k", "created"),
		of("other-key", "k2", "exited"), {ID: "no-key", State: "exited"},
	}}
	e := NewEngine("test", "", api, slog.New(slog.DiscardHandler), time.Second)
	n, err := e.SweepExited(context.Background(), "k")
	if err != nil || n != 3 {
		t.Fatalf("SweepExited = %d, %v; want 3", n, err)
	}
	slices.Sort(api.removed)
	if want := []string{"dead", "exited", "stopped"}; !slices.Equal(api.removed, want) {
		t.Fatalf("removed %v, want %v", api.removed, want)
	}
	api.removed = nil
	if n, _ := e.SweepExited(context.Background(), ""); n != 0 || len(api.removed) != 0 {
		t.Fatalf("a sweep without a key removed %v", api.removed)
	}
}
