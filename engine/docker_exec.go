package engine

import (
	"context"
	"fmt"
	"io"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// inspectSandbox implements execAPI.
func (d *Docker) inspectSandbox(ctx context.Context, ref string) (sandboxState, error) {
	info, err := d.api.ContainerInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
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
		st.Running, st.ExitCode = info.State.Running, info.State.ExitCode
	}
	return st, nil
}

// execAttach implements execAPI: an exec instance without a terminal,
// whose multiplexed output stdcopy separates.
func (d *Docker) execAttach(ctx context.Context, id string, cmd []string, stdout, stderr *boundedPipe) (io.WriteCloser, <-chan struct{}, func(), error) {
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
func (d *Docker) Resume(ctx context.Context, engineName, ref string, cmd []string) (Sandbox, error) {
	return d.e.resume(ctx, engineName, ref, cmd)
}

// RemoveSandbox implements Resumer.
func (d *Docker) RemoveSandbox(ctx context.Context, engineName, ref string) error {
	return d.e.removeSandbox(ctx, engineName, ref)
}

// SweepExited implements Sweeper.
func (d *Docker) SweepExited(ctx context.Context, keyID string) (int, error) {
	return d.e.sweepExited(ctx, keyID)
}
