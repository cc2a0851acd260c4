package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type namedEngine struct{ name string }

func (e namedEngine) Start(context.Context, Spec) (Sandbox, error) { return nil, errors.ErrUnsupported }
func (e namedEngine) Name() string                                 { return e.name }

// TestNoSnapshots: an engine without snapshots is refused with
// ErrNoSnapshots, naming it and why, and where they work.
func TestNoSnapshots(t *testing.T) {
	for name, want := range map[string]string{
		BackendPodman:     "Podman refuses checkpoints under gVisor",
		BackendKubernetes: "the cluster's container runtime offers no restore",
		"other":           "it has no checkpoints the bridge can use",
	} {
		e := namedEngine{name}
		_, err := SleepSandbox(context.Background(), e, "", "abc")
		if !errors.Is(err, ErrNoSnapshots) || !strings.Contains(err.Error(), name+": "+want) || !strings.Contains(err.Error(), "Docker with gVisor") {
			t.Errorf("%s: %v", name, err)
		}
		if why := CanSnapshot(context.Background(), e); !strings.Contains(why, want) {
			t.Errorf("%s: CanSnapshot %q", name, why)
		}
		if _, err := WakeSandbox(context.Background(), e, "", "abc"); !errors.Is(err, ErrNoSnapshots) {
			t.Errorf("%s: wake %v", name, err)
		}
		if _, err := ForkSandbox(context.Background(), e, "", "abc", 2, nil); !errors.Is(err, ErrNoSnapshots) {
			t.Errorf("%s: fork %v", name, err)
		}
	}
}
