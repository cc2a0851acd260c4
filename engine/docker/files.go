package docker

import (
	"context"
	"fmt"
	"io"
	"io/fs"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// CopyOut implements lifecycle.Copier. The daemon archives a symbolic link at
// dir as a link, never as its target, and so the links under dir: the
// archive's entries suffice. It sees the file-exchange volumes, not tmpfs
// mounts.
func (c *dockerContainer) CopyOut(ctx context.Context, dir string) (io.ReadCloser, error) {
	if c.filesInside(ctx) {
		return execTarOut(ctx, c.api, c.id, dir)
	}
	rc, _, err := c.api.CopyFromContainer(ctx, c.id, dir)
	if err != nil {
		return nil, c.notFound(ctx, err)
	}
	return rc, nil
}

// CopyIn implements lifecycle.Copier. The daemon keeps the owners of the tar
// headers unless asked to give the files to the container's user; it
// writes to volumes even when the root filesystem is read-only.
func (c *dockerContainer) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	if c.filesInside(ctx) {
		return execTar(ctx, c.api, c.id, []string{"python3", "-I", "-S", "-c", lifecycle.TarIn, dir}, r, io.Discard)
	}
	err := c.api.CopyToContainer(ctx, c.id, dir, r, container.CopyToContainerOptions{CopyUIDGID: false})
	if err != nil {
		return c.notFound(ctx, err)
	}
	return nil
}

// notFound returns err, the daemon's answer to a call on a path of the
// container, wrapping fs.ErrNotExist when the path is missing. The daemon
// answers "not found" for a missing container too: inspecting the
// container tells the two apart.
func (c *dockerContainer) notFound(ctx context.Context, err error) error {
	if !cerrdefs.IsNotFound(err) {
		return err
	}
	if _, ierr := c.api.ContainerInspect(ctx, c.id); cerrdefs.IsNotFound(ierr) {
		return fmt.Errorf("the container is gone: %w", err)
	}
	return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
}
