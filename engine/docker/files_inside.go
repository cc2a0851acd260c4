package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// filesInside reports whether the container's file-exchange directory is
// a mount inside the sandbox that the daemon's archive calls do not see:
// a sandbox that may sleep (LabelSleepTTL) has it as a tmpfs of gVisor's,
// which a checkpoint holds (a volume's files stay on the host, and a
// stopped container's tmpfs volume is emptied: the restore would miss
// them). Its files then pass through the sandbox's Python, as a pod's do.
// The answer is asked of the daemon once per container.
func (c *dockerContainer) filesInside(ctx context.Context) bool {
	c.insideOnce.Do(func() {
		in, err := c.api.ContainerInspect(ctx, c.id)
		c.inside = err == nil && in.Config != nil && in.Config.Labels[engine.LabelSleepTTL] != ""
	})
	return c.inside
}

// execTarOut runs lifecycle.TarOut of dir in container id and returns
// its tar stream.
func execTarOut(ctx context.Context, api dockerAPI, id, dir string) (io.ReadCloser, error) {
	return lifecycle.StreamOut(ctx, func(ctx context.Context, w io.Writer) error {
		return execTar(ctx, api, id, []string{"python3", "-I", "-S", "-c", lifecycle.TarOut, dir}, nil, w)
	})
}

// execTar runs cmd, one of the tar helpers, in container id as its user,
// with stdin (nil: none) and its standard output to stdout; a missing
// directory is fs.ErrNotExist, another failure says its standard error.
func execTar(ctx context.Context, api dockerAPI, id string, cmd []string, stdin io.Reader, stdout io.Writer) error {
	ex, err := api.ContainerExecCreate(ctx, id, container.ExecOptions{AttachStdin: stdin != nil, AttachStdout: true, AttachStderr: true, Cmd: cmd})
	if err != nil {
		return fmt.Errorf("creating the exec instance: %w", err)
	}
	hj, err := api.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return fmt.Errorf("attaching to the exec instance: %w", err)
	}
	defer hj.Close()
	stop := context.AfterFunc(ctx, func() { hj.Close() })
	defer stop()
	if stdin != nil {
		go func() {
			io.Copy(hj.Conn, stdin)
			hj.CloseWrite()
		}()
	}
	var stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(stdout, &lifecycle.LimitedWriter{W: &stderr, N: 4 << 10}, hj.Reader); err != nil {
		return fmt.Errorf("reading the exec's output: %w", err)
	}
	in, err := api.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		return fmt.Errorf("inspecting the exec instance: %w", err)
	}
	switch in.ExitCode {
	case 0:
		return nil
	case lifecycle.TarNoDir:
		return fmt.Errorf("%w: %s", fs.ErrNotExist, cmd[len(cmd)-1])
	}
	return fmt.Errorf("the sandbox's tar helper exited with code %d: %s", in.ExitCode, strings.TrimSpace(stderr.String()))
}
