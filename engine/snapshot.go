package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A Snapshotter is an Engine that writes a running sandbox's memory to
// its disk and brings it back: a sandbox sleeps (checkpointed, its
// container stopped, its memory freed) and wakes with its state, and a
// sandbox forks into new containers restored from one checkpoint while it
// goes on. Docker with gVisor (runsc) is the one engine that can; the
// others refuse with ErrNoSnapshots.
type Snapshotter interface {
	// CanSnapshot says why the engine cannot checkpoint sandboxes ("" when
	// it can): the daemon's experimental mode, the gVisor runtime.
	CanSnapshot(ctx context.Context) string
	// Sleep checkpoints the running sandbox ref on the engine named
	// engineName ("" for a single engine) and stops its container; the
	// checkpoint stays with the container until Wake or its removal.
	Sleep(ctx context.Context, engineName, ref string) (Sleep, error)
	// Wake restores the sleeping sandbox ref from its checkpoint. It
	// reports woke false, and no error, when the sandbox already runs
	// (another replica woke it first); a sandbox without a checkpoint
	// is ErrNoCheckpoint.
	Wake(ctx context.Context, engineName, ref string) (woke bool, err error)
	// Fork checkpoints the running sandbox ref, leaving it running, and
	// restores the checkpoint into n new containers made like it, with
	// labels (the owner's, the session's) over its own; it returns
	// their IDs. It needs the engine's data root on this host.
	Fork(ctx context.Context, engineName, ref string, n int, labels map[string]string) ([]string, error)
	// Sleeping lists the sleeping sandboxes on the engine.
	Sleeping(ctx context.Context) ([]Sleeping, error)
	// Awake lists the running sandboxes resumable with keyID
	// (LabelResumable) that may sleep (LabelSleepTTL): those a replica
	// may put to sleep when the one that held them is gone.
	Awake(ctx context.Context, keyID string) ([]string, error)
}

// A Sleep is what putting a sandbox to sleep did.
type Sleep struct {
	// Took is how long the checkpoint took.
	Took time.Duration
	// Bytes is the checkpoint's size on the engine's disk; -1 when the
	// bridge cannot see the engine's data root.
	Bytes int64
}

// A Sleeping is one sleeping sandbox: its container, labels, when it
// went to sleep and the disk its checkpoint holds (-1: unknown).
type Sleeping struct {
	ID     string
	Labels map[string]string
	Since  time.Time
	Bytes  int64
}

// Sentinel errors of snapshots, for errors.Is.
var (
	// ErrNoSnapshots reports an engine that cannot checkpoint sandboxes;
	// the error names it and says why.
	ErrNoSnapshots = errors.New("this engine cannot checkpoint sandboxes")
	// ErrNoCheckpoint reports a stopped sandbox whose checkpoint is gone
	// (removed behind the bridge, or never taken).
	ErrNoCheckpoint = errors.New("the sandbox's checkpoint is gone")
)

// SleepCheckpoint begins the name of the checkpoint a sleeping sandbox
// keeps, followed by "-" and the time it was taken (Unix nanoseconds).
const SleepCheckpoint = "mcp-sleep"

// LabelSleepTTL is the label of a sandbox created by a bridge whose
// sessions sleep: how long, in seconds, it may sleep before the clean-up
// removes it. The clean-up spares a sleeping sandbox until then.
const LabelSleepTTL = LabelBridge + ".sleep-ttl"

// noSnapshots returns ErrNoSnapshots for the engine e, saying why its
// kind cannot.
func noSnapshots(e Engine, err error) error {
	if !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	why := "it has no checkpoints the bridge can use"
	switch nameOf(e) {
	case BackendPodman:
		why = "Podman refuses checkpoints under gVisor (runsc), and CRIU, which it uses under runc, fails on this kind of kernel"
	case BackendKubernetes:
		why = "the cluster's container runtime offers no restore"
	}
	return fmt.Errorf("%w: %s: %s; sessions sleep, wake and fork on Docker with gVisor (MCP_BRIDGE_OCI_RUNTIME=runsc, the daemon in experimental mode)",
		ErrNoSnapshots, nameOf(e), why)
}

// CanSnapshot says why e cannot checkpoint sandboxes ("" when it can).
func CanSnapshot(ctx context.Context, e Engine) string {
	s, err := As[Snapshotter](ctx, e)
	if err != nil {
		return noSnapshots(e, err).Error()
	}
	return s.CanSnapshot(ctx)
}

// SleepSandbox puts the sandbox ref of e named engineName to sleep
// (Snapshotter.Sleep).
func SleepSandbox(ctx context.Context, e Engine, engineName, ref string) (Sleep, error) {
	s, name, _, err := on[Snapshotter](ctx, e, engineName)
	if err != nil {
		return Sleep{}, fmt.Errorf("putting a sandbox to sleep: %w", noSnapshots(e, err))
	}
	return s.Sleep(ctx, name, ref)
}

// WakeSandbox wakes the sleeping sandbox ref (Snapshotter.Wake).
func WakeSandbox(ctx context.Context, e Engine, engineName, ref string) (bool, error) {
	s, name, _, err := on[Snapshotter](ctx, e, engineName)
	if err != nil {
		return false, fmt.Errorf("waking a sandbox: %w", noSnapshots(e, err))
	}
	return s.Wake(ctx, name, ref)
}

// ForkSandbox forks the sandbox ref into n (Snapshotter.Fork).
func ForkSandbox(ctx context.Context, e Engine, engineName, ref string, n int, labels map[string]string) ([]string, error) {
	s, name, _, err := on[Snapshotter](ctx, e, engineName)
	if err != nil {
		return nil, fmt.Errorf("forking a sandbox: %w", noSnapshots(e, err))
	}
	return s.Fork(ctx, name, ref, n, labels)
}
