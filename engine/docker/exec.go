package docker

import (
	"context"
	"fmt"
	"io"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// InspectSandbox implements lifecycle.ExecAPI.
func (d *Docker) InspectSandbox(ctx context.Context, ref string) (lifecycle.SandboxState, error) {
	info, err := d.api.ContainerInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
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
		st.Running, st.ExitCode = info.State.Running, info.State.ExitCode
	}
	return st, nil
}

// ExecAttach implements lifecycle.ExecAPI: an exec instance without a terminal,
// whose multiplexed output stdcopy separates.
func (d *Docker) ExecAttach(ctx context.Context, id string, cmd []string, stdout, stderr *lifecycle.Pipe) (io.WriteCloser, <-chan struct{}, func(), error) {
	ex, err := d.api.ContainerExecCreate(ctx, id, container.ExecOptions{
		AttachStdin: true, AttachStdout: true, AttachStderr: true, Cmd: cmd,
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating the exec instance: %w", err)
	}
	hj, err := d.api.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("attaching the exec instance: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := stdcopy.StdCopy(stdout, stderr, hj.Reader)
		stdout.CloseWithError(err)
		stderr.CloseWithError(err)
	}()
	return &hijackStdin{hj: hj}, done, hj.Close, nil
}

// Resume implements Resumer.
func (d *Docker) Resume(ctx context.Context, engineName, ref string, cmd []string) (engine.Sandbox, error) {
	return d.e.Resume(ctx, engineName, ref, cmd)
}

// RemoveSandbox implements Resumer.
func (d *Docker) RemoveSandbox(ctx context.Context, engineName, ref string) error {
	return d.e.RemoveSandbox(ctx, engineName, ref)
}

// SweepExited implements Sweeper.
func (d *Docker) SweepExited(ctx context.Context, keyID string) (int, error) {
	return d.e.SweepExited(ctx, keyID)
}

// SandboxFiles implements FileReacher.
func (d *Docker) SandboxFiles(ctx context.Context, engineName, ref string) (engine.Files, error) {
	return d.e.SandboxFiles(ctx, engineName, ref)
}
