//go:build remote

package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	dockertypes "github.com/docker/docker/api/types/container"

	"github.com/containers/podman/v5/pkg/api/handlers"
	"github.com/containers/podman/v5/pkg/bindings/containers"
)

// inspectSandbox implements execAPI.
func (p *Podman) inspectSandbox(ctx context.Context, ref string) (sandboxState, error) {
	info, err := containers.Inspect(p.ctx(ctx), ref, nil)
	if podmanNotFound(err) {
		return sandboxState{}, fmt.Errorf("%w: container %s does not exist (it was removed)", ErrNoSandbox, shortID(ref))
	}
	if err != nil {
		return sandboxState{}, fmt.Errorf("inspecting container %s: %w", shortID(ref), err)
	}
	st := sandboxState{ID: info.ID}
	if info.Config != nil {
		st.Labels = info.Config.Labels
	}
	if info.State != nil {
		st.Running, st.ExitCode = info.State.Running, int(info.State.ExitCode)
	}
	return st, nil
}

// execAttach implements execAPI: an exec session without a terminal,
// attached over a connection of its own (ExecStartAndAttach swaps the
// transport of the connection it is given, as Attach does).
func (p *Podman) execAttach(ctx context.Context, id string, cmd []string, stdout, stderr *boundedPipe) (io.WriteCloser, <-chan struct{}, func(), error) {
	conn, err := podmanConnect(ctx, p.ep)
	if err != nil {
		return nil, nil, nil, err
	}
	session, err := containers.ExecCreate(conn, id, &handlers.ExecCreateConfig{ExecOptions: dockertypes.ExecOptions{
		AttachStdin: true, AttachStdout: true, AttachStderr: true, Cmd: cmd,
	}})
	if err != nil {
		closeIdle(conn)
		return nil, nil, nil, fmt.Errorf("creating the exec session: %w", err)
	}
	stdinR, stdin := io.Pipe()
	closeSockets := trackDials(conn)
	actx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer closeIdle(conn)
		defer closeSockets()
		var out, errw io.Writer = stdout, stderr
		yes := true
		err := containers.ExecStartAndAttach(mergeValues(actx, conn), session, &containers.ExecStartAndAttachOptions{
			OutputStream: &out, ErrorStream: &errw, InputStream: bufio.NewReader(stdinR),
			AttachOutput: &yes, AttachError: &yes, AttachInput: &yes,
		})
		stdout.CloseWithError(err)
		stderr.CloseWithError(err)
	}()
	detach := func() {
		stdin.Close()
		cancel()
		closeSockets()
	}
	return stdin, done, detach, nil
}

// Resume implements Resumer.
func (p *Podman) Resume(ctx context.Context, engineName, ref string, cmd []string) (Sandbox, error) {
	return p.e.resume(ctx, engineName, ref, cmd)
}

// RemoveSandbox implements Resumer.
func (p *Podman) RemoveSandbox(ctx context.Context, engineName, ref string) error {
	return p.e.removeSandbox(ctx, engineName, ref)
}

// SweepExited implements Sweeper.
func (p *Podman) SweepExited(ctx context.Context, keyID string) (int, error) {
	return p.e.sweepExited(ctx, keyID)
}

// SandboxFiles implements FileReacher.
func (p *Podman) SandboxFiles(ctx context.Context, engineName, ref string) (Files, error) {
	return p.e.sandboxFiles(ctx, engineName, ref)
}

// memoryUsage implements memoryAPI: one sample of the service's stats of
// container id, its MemUsage. What that counts is the service's (see
// MemoryReader): Podman 5.6 and later count as docker stats does, an
// earlier service counts the page cache too on cgroup v1 and anonymous
// memory only on cgroup v2. A rootless service on cgroup v1 has no stats.
func (p *Podman) memoryUsage(ctx context.Context, id string) (int64, error) {
	reports, err := containers.Stats(p.ctx(ctx), []string{id}, new(containers.StatsOptions).WithStream(false))
	if err != nil {
		return 0, err
	}
	// Not streamed, the bindings send one report and close the channel;
	// it must be received, or their goroutine waits forever.
	r, ok := <-reports
	if !ok {
		return 0, errors.New("the service sent no stats")
	}
	if r.Error != nil {
		return 0, fmt.Errorf("the service's stats: %w", r.Error)
	}
	for _, s := range r.Stats {
		if s.ContainerID == id {
			return memoryLess(s.MemUsage, 0)
		}
	}
	return 0, fmt.Errorf("the service's stats do not hold container %s", shortID(id))
}

// SandboxMemory implements MemoryReader.
func (p *Podman) SandboxMemory(ctx context.Context, engineName, ref string) (int64, error) {
	return p.e.sandboxMemory(ctx, engineName, ref)
}
