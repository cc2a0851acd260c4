package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/checkpoint"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/system"
	"golang.org/x/sync/errgroup"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// A checkpointAPI is the part of the Docker client that checkpoints
// containers (the daemon's experimental API).
type checkpointAPI interface {
	Info(ctx context.Context) (system.Info, error)
	CheckpointCreate(ctx context.Context, id string, opts checkpoint.CreateOptions) error
	CheckpointDelete(ctx context.Context, id string, opts checkpoint.DeleteOptions) error
	CheckpointList(ctx context.Context, id string, opts checkpoint.ListOptions) ([]checkpoint.Summary, error)
	DaemonHost() string
}

// checkpointsOf returns the checkpoint API of d's client, or why there is
// none.
func checkpointsOf(ctx context.Context, d *Docker) (checkpointAPI, system.Info, error) {
	c, ok := d.api.(checkpointAPI)
	if !ok {
		return nil, system.Info{}, fmt.Errorf("%w: docker: this client cannot checkpoint", engine.ErrNoSnapshots)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return nil, system.Info{}, fmt.Errorf("asking the daemon for its settings: %w", err)
	}
	if !info.ExperimentalBuild {
		return nil, info, fmt.Errorf("%w: docker at %s is not in experimental mode, which its checkpoints need (\"experimental\": true in /etc/docker/daemon.json, then restart dockerd; scripts/provision does it)",
			engine.ErrNoSnapshots, d.e.Addr)
	}
	if !hasGVisor(info) {
		return nil, info, fmt.Errorf("%w: docker at %s has no gVisor runtime (runsc), the one whose checkpoints work here; register a current runsc in /etc/docker/daemon.json (scripts/provision --kubernetes builds one)",
			engine.ErrNoSnapshots, d.e.Addr)
	}
	return c, info, nil
}

func hasGVisor(info system.Info) bool {
	for name := range info.Runtimes {
		if engine.IsGVisor(name) {
			return true
		}
	}
	return false
}

// CanSnapshot implements engine.Snapshotter.
func (d *Docker) CanSnapshot(ctx context.Context) string {
	if _, _, err := checkpointsOf(ctx, d); err != nil {
		return err.Error()
	}
	return ""
}

// gVisorSandbox inspects the bridge's sandbox ref on d and checks that it
// runs under gVisor.
func gVisorSandbox(ctx context.Context, d *Docker, engineName, ref string) (container.InspectResponse, error) {
	if engineName != "" {
		return container.InspectResponse{}, fmt.Errorf("%w: %q names an engine, and this bridge has one, unnamed", engine.ErrOtherEngine, engineName)
	}
	c, err := d.api.ContainerInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return c, fmt.Errorf("%w: container %s does not exist (it was removed)", engine.ErrNoSandbox, lifecycle.ShortID(ref))
	}
	if err != nil {
		return c, fmt.Errorf("inspecting container %s: %w", lifecycle.ShortID(ref), err)
	}
	if c.ContainerJSONBase == nil || c.Config == nil || c.HostConfig == nil || c.State == nil {
		return c, fmt.Errorf("inspecting container %s: the daemon's answer is incomplete", lifecycle.ShortID(ref))
	}
	if c.Config.Labels[engine.LabelBridge] != "1" {
		return c, fmt.Errorf("%w: container %s is not a sandbox of this bridge", engine.ErrNoSandbox, lifecycle.ShortID(ref))
	}
	if !engine.IsGVisor(c.HostConfig.Runtime) {
		rt := cmpOr(c.HostConfig.Runtime, "the default runtime (runc)")
		return c, fmt.Errorf("%w: docker: sandbox %s runs under %s; Docker's checkpoints work here under gVisor only (MCP_BRIDGE_OCI_RUNTIME=runsc)",
			engine.ErrNoSnapshots, lifecycle.ShortID(ref), rt)
	}
	return c, nil
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// Sleep implements engine.Snapshotter.
func (d *Docker) Sleep(ctx context.Context, engineName, ref string) (engine.Sleep, error) {
	cp, info, err := checkpointsOf(ctx, d)
	if err != nil {
		return engine.Sleep{}, err
	}
	c, err := gVisorSandbox(ctx, d, engineName, ref)
	if err != nil {
		return engine.Sleep{}, err
	}
	if !c.State.Running {
		return engine.Sleep{}, &engine.ExitedError{Code: c.State.ExitCode}
	}
	// A name of its own: two bridges putting it to sleep at once never
	// touch each other's checkpoint (the second fails: it has stopped).
	t0 := time.Now()
	name := engine.SleepCheckpoint + "-" + strconv.FormatInt(t0.UnixNano(), 10)
	if err := cp.CheckpointCreate(ctx, c.ID, checkpoint.CreateOptions{CheckpointID: name, Exit: true}); err != nil {
		if now, ierr := d.api.ContainerInspect(ctx, c.ID); ierr == nil && now.State != nil && !now.State.Running {
			return engine.Sleep{}, fmt.Errorf("checkpointing sandbox %s: %w", lifecycle.ShortID(c.ID), &engine.ExitedError{Code: now.State.ExitCode})
		}
		return engine.Sleep{}, fmt.Errorf("checkpointing sandbox %s: %w", lifecycle.ShortID(c.ID), err)
	}
	took := time.Since(t0)
	if dir := checkpointsDir(info, c.ID); dir != "" {
		// The container shows stopped before the daemon has copied the
		// checkpoint out: a bridge that wakes it waits for this mark.
		if err := os.WriteFile(filepath.Join(dir, name, completeMark), nil, 0o600); err != nil {
			d.e.Log.Warn("marking a sleep checkpoint complete", "id", lifecycle.ShortID(c.ID), "err", err)
		}
	}
	return engine.Sleep{Took: took, Bytes: checkpointBytes(info, c.ID, name)}, nil
}

// Wake implements engine.Snapshotter.
func (d *Docker) Wake(ctx context.Context, engineName, ref string) (bool, error) {
	cp, info, err := checkpointsOf(ctx, d)
	if err != nil {
		return false, err
	}
	c, err := gVisorSandbox(ctx, d, engineName, ref)
	if err != nil {
		return false, err
	}
	if c.State.Running {
		return false, nil
	}
	list, err := cp.CheckpointList(ctx, c.ID, checkpoint.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("listing the checkpoints of sandbox %s: %w", lifecycle.ShortID(c.ID), err)
	}
	names := sleepCheckpoints(list)
	if len(names) == 0 {
		return false, fmt.Errorf("%w: sandbox %s stopped (exit code %d) and has no checkpoint to wake from", engine.ErrNoCheckpoint, lifecycle.ShortID(c.ID), c.State.ExitCode)
	}
	name := names[len(names)-1]
	// On a local engine, one bridge of several restores it at a time
	// (the daemon uploads the checkpoint to containerd for each start,
	// and two uploads of it collide), and each upload is of content of
	// its own: containerd may still hold the same bytes from the
	// checkpoint's making, which Docker 20.10 takes for a conflict
	// ("content … already exists").
	if dir := checkpointsDir(info, c.ID); dir != "" {
		waitComplete(ctx, filepath.Join(dir, name, completeMark))
		unlock, mine, err := lockWake(filepath.Join(dir, name))
		if err != nil {
			return false, fmt.Errorf("restoring sandbox %s: %w", lifecycle.ShortID(c.ID), err)
		}
		if !mine {
			return false, d.awaitRunning(ctx, c.ID, wakeWait)
		}
		defer unlock()
	}
	if err := d.api.ContainerStart(ctx, c.ID, container.StartOptions{CheckpointID: name}); err != nil {
		// Another bridge (on another host) may be waking it: then it runs
		// soon.
		if werr := d.awaitRunning(ctx, c.ID, 5*time.Second); werr == nil {
			return false, nil
		}
		return false, fmt.Errorf("restoring sandbox %s from its checkpoint: %w", lifecycle.ShortID(c.ID), err)
	}
	dctx, cancel := lifecycle.CleanupContext(lifecycle.CleanupTimeout)
	defer cancel()
	for _, name := range names {
		if err := cp.CheckpointDelete(dctx, c.ID, checkpoint.DeleteOptions{CheckpointID: name}); err != nil && !cerrdefs.IsNotFound(err) {
			d.e.Log.Warn("removing a woken sandbox's checkpoint", "id", lifecycle.ShortID(c.ID), "err", err)
		}
	}
	return true, nil
}

// completeMark is the file a sleep checkpoint's directory holds once the
// bridge that took it has its answer: the checkpoint is whole.
const completeMark = "mcp-complete"

// waitComplete waits, up to wakeWait, for the mark of a checkpoint whose
// making another bridge may still be finishing; one never marked (its
// bridge died, or an older one made it) is tried as it is.
func waitComplete(ctx context.Context, mark string) {
	ctx, cancel := context.WithTimeout(ctx, wakeWait)
	defer cancel()
	for {
		if _, err := os.Stat(mark); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// wakeWait bounds the wait for a wake another bridge is making.
const wakeWait = 2 * time.Minute

// lockWake takes the right to restore from the checkpoint directory dir:
// a directory made in it (atomic on the engine's host), holding a file
// of random bytes that makes this upload's content its own. It reports
// mine false when another bridge holds it; a lock older than wakeWait is
// a dead bridge's and is taken over. unlock removes it.
func lockWake(dir string) (unlock func(), mine bool, err error) {
	lock := filepath.Join(dir, "mcp-waking")
	if err := os.Mkdir(lock, 0o700); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return nil, false, err
		}
		st, serr := os.Stat(lock)
		if serr != nil || time.Since(st.ModTime()) < wakeWait {
			return nil, false, nil
		}
		os.RemoveAll(lock)
		if err := os.Mkdir(lock, 0o700); err != nil {
			return nil, false, nil
		}
	}
	if err := os.WriteFile(filepath.Join(lock, "nonce"), []byte(randomHex(16)), 0o600); err != nil {
		os.RemoveAll(lock)
		return nil, false, err
	}
	return func() { os.RemoveAll(lock) }, true, nil
}

// awaitRunning waits up to max for container id to run: another bridge
// restores it.
func (d *Docker) awaitRunning(ctx context.Context, id string, max time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, max)
	defer cancel()
	for {
		c, err := d.api.ContainerInspect(ctx, id)
		if err == nil && c.State != nil && c.State.Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sandbox %s did not run within %v of another bridge's wake", lifecycle.ShortID(id), max)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sleepCheckpoints returns the names of the sleep checkpoints in list
// (engine.SleepCheckpoint and the time it was taken), oldest first.
func sleepCheckpoints(list []checkpoint.Summary) []string {
	var names []string
	for _, c := range list {
		if strings.HasPrefix(c.Name, engine.SleepCheckpoint+"-") {
			names = append(names, c.Name)
		}
	}
	slices.Sort(names) // the times have as many digits until 2286
	return names
}

// checkpointsDir is where the daemon keeps the checkpoints of container
// id; "" when its data root is not on this host.
func checkpointsDir(info system.Info, id string) string {
	if info.DockerRootDir == "" || !filepath.IsAbs(info.DockerRootDir) {
		return ""
	}
	dir := filepath.Join(info.DockerRootDir, "containers", id)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return ""
	}
	return filepath.Join(dir, "checkpoints")
}

// checkpointBytes returns the size of checkpoint name of container id,
// -1 when the daemon's data root is not on this host.
func checkpointBytes(info system.Info, id, name string) int64 {
	dir := checkpointsDir(info, id)
	if dir == "" {
		return -1
	}
	var n int64
	err := filepath.WalkDir(filepath.Join(dir, name), func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		return -1
	}
	return n
}

// Fork implements engine.Snapshotter: a checkpoint of ref, taken while it
// runs on, linked into the checkpoints directory of each new container
// (so the daemon's data root must be on this host, and writable: root on
// a local engine) and restored there. Each copy carries a file of its own,
// so that the daemon, which uploads a checkpoint to containerd by its
// digest, restores them side by side.
func (d *Docker) Fork(ctx context.Context, engineName, ref string, n int, labels map[string]string) (ids []string, err error) {
	if n < 1 {
		return nil, fmt.Errorf("forking a sandbox: %d forks asked", n)
	}
	cp, info, err := checkpointsOf(ctx, d)
	if err != nil {
		return nil, err
	}
	parent, err := gVisorSandbox(ctx, d, engineName, ref)
	if err != nil {
		return nil, err
	}
	if !parent.State.Running {
		return nil, &engine.ExitedError{Code: parent.State.ExitCode}
	}
	if !strings.HasPrefix(cp.DaemonHost(), "unix://") || checkpointsDir(info, parent.ID) == "" {
		return nil, fmt.Errorf("%w: docker at %s: a fork copies a checkpoint into another container's directory under the daemon's data root (%s), which is not on this host: forks need a local engine and root",
			engine.ErrNoSnapshots, d.e.Addr, info.DockerRootDir)
	}
	name := "mcp-fork-" + randomHex(6)
	if err := cp.CheckpointCreate(ctx, parent.ID, checkpoint.CreateOptions{CheckpointID: name}); err != nil {
		return nil, fmt.Errorf("checkpointing sandbox %s: %w", lifecycle.ShortID(parent.ID), err)
	}
	defer func() {
		dctx, cancel := lifecycle.CleanupContext(lifecycle.CleanupTimeout)
		defer cancel()
		_ = cp.CheckpointDelete(dctx, parent.ID, checkpoint.DeleteOptions{CheckpointID: name})
		if err != nil {
			for _, id := range ids {
				_ = d.Remove(dctx, id)
			}
			ids = nil
		}
	}()
	src := filepath.Join(checkpointsDir(info, parent.ID), name)
	cfg, host := *parent.Config, *parent.HostConfig
	cfg.Labels = maps.Clone(parent.Config.Labels)
	maps.Copy(cfg.Labels, lifecycle.OwnerLabels(d.e.Owner))
	maps.Copy(cfg.Labels, labels)
	for i := range n {
		created, err := d.api.ContainerCreate(ctx, &cfg, &host, nil, nil, "")
		if err != nil {
			return ids, fmt.Errorf("creating fork %d: %w", i+1, err)
		}
		ids = append(ids, created.ID)
		if err := linkCheckpoint(src, filepath.Join(checkpointsDir(info, created.ID), name), i); err != nil {
			return ids, fmt.Errorf("copying the checkpoint into fork %d: %w", i+1, err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	for i, id := range ids {
		g.Go(func() error {
			if err := d.api.ContainerStart(gctx, id, container.StartOptions{CheckpointID: name}); err != nil {
				return fmt.Errorf("restoring fork %d: %w", i+1, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return ids, err
	}
	for _, id := range ids {
		_ = cp.CheckpointDelete(ctx, id, checkpoint.DeleteOptions{CheckpointID: name})
	}
	return ids, nil
}

// linkCheckpoint makes dst a copy of the checkpoint directory src: its
// files hard-linked (the daemon only reads them), and a file naming the
// fork, which makes each copy's content its own.
func linkCheckpoint(src, dst string, fork int) error {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if err := os.Link(from, to); err != nil {
			if err := copyFile(from, to); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(filepath.Join(dst, "mcp-fork"), []byte(strconv.Itoa(fork)+"\n"), 0o600)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Sleeping implements engine.Snapshotter: the bridge's stopped sandboxes
// that keep a sleep checkpoint.
func (d *Docker) Sleeping(ctx context.Context) ([]engine.Sleeping, error) {
	cp, info, err := checkpointsOf(ctx, d)
	if err != nil {
		return nil, err
	}
	list, err := d.api.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", engine.LabelBridge+"=1"), filters.Arg("label", engine.LabelSleepTTL), filters.Arg("status", "exited"))})
	if err != nil {
		return nil, fmt.Errorf("listing sandboxes: %w", err)
	}
	var out []engine.Sleeping
	for _, c := range list {
		cps, err := cp.CheckpointList(ctx, c.ID, checkpoint.ListOptions{})
		names := sleepCheckpoints(cps)
		if err != nil || len(names) == 0 {
			continue
		}
		s := engine.Sleeping{ID: c.ID, Labels: c.Labels, Bytes: checkpointBytes(info, c.ID, names[len(names)-1])}
		if in, err := d.api.ContainerInspect(ctx, c.ID); err == nil && in.State != nil {
			s.Since, _ = time.Parse(time.RFC3339Nano, in.State.FinishedAt)
		}
		out = append(out, s)
	}
	return out, nil
}

// Awake implements engine.Snapshotter.
func (d *Docker) Awake(ctx context.Context, keyID string) ([]string, error) {
	if keyID == "" {
		return nil, nil
	}
	list, err := d.api.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", engine.LabelResumable+"="+keyID), filters.Arg("label", engine.LabelSleepTTL),
		filters.Arg("status", "running"))})
	if err != nil {
		return nil, fmt.Errorf("listing sandboxes: %w", err)
	}
	ids := make([]string, 0, len(list))
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids, nil
}

var _ engine.Snapshotter = (*Docker)(nil)
