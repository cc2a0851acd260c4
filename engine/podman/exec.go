//go:build remote

package podman

import (
	"bufio"
	"context"
	"fmt"
	"io"

	dockertypes "github.com/docker/docker/api/types/container"

	"github.com/containers/podman/v5/pkg/api/handlers"
	"github.com/containers/podman/v5/pkg/bindings/containers"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// InspectSandbox implements lifecycle.ExecAPI.
func (p *Podman) InspectSandbox(ctx context.Context, ref string) (lifecycle.SandboxState, error) {
	info, err := containers.Inspect(p.ctx(ctx), ref, nil)
	if podmanNotFound(err) {
		return lifecycle.SandboxState{}, fmt.Errorf("%w: container %s does not exist (it was removed)", engine.ErrNoSandbox, lifecycle.ShortID(ref))
	}
	if err != nil {
		return lifecycle.SandboxState{}, fmt.Errorf("inspecting container %s: %w", lifecycle.ShortID(ref), err)
	}
	st := lifecycle.SandboxState{ID: info.ID}
	if info.Config != nil {
		st.Labels = info.Config.Labels
	}
	if info.State != nil {
		st.Running, st.ExitCode = info.State.Running, int(info.State.ExitCode)
	}
	return st, nil
}

// ExecAttach implements lifecycle.ExecAPI: an exec session without a terminal,
// attached over a connection of its own (ExecStartAndAttach swaps the
// transport of the connection it is given, as Attach does).
func (p *Podman) ExecAttach(ctx context.Context, id string, cmd []string, stdout, stderr *lifecycle.Pipe) (io.WriteCloser, <-chan struct{}, func(), error) {
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
func (p *Podman) Resume(ctx context.Context, engineName, ref string, cmd []string) (engine.Sandbox, error) {
	return p.e.Resume(ctx, engineName, ref, cmd)
}

// RemoveSandbox implements Resumer.
func (p *Podman) RemoveSandbox(ctx context.Context, engineName, ref string) error {
	return p.e.RemoveSandbox(ctx, engineName, ref)
}

// SweepExited implements Sweeper.
func (p *Podman) SweepExited(ctx context.Context, keyID string) (int, error) {
	return p.e.SweepExited(ctx, keyID)
}

// SandboxFiles implements FileReacher.
func (p *Podman) SandboxFiles(ctx context.Context, engineName, ref string) (engine.Files, error) {
	return p.e.SandboxFiles(ctx, engineName, ref)
}
