//go:build remote

package podman

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/copy"
	"github.com/containers/podman/v5/pkg/errorhandling"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// archiveEndpoint is the service's archive API of a container, as the
// bindings' CopyToArchive and CopyFromArchiveWithOptions call it. They
// are not called themselves: the first hides the stat the service sends
// with the archive, the second replaces the service's error by the HTTP
// status ("500 Internal Server Error" for a full mount).
const archiveEndpoint = "/containers/%s/archive"

// CopyOut implements lifecycle.Copier. The service, unlike Docker's daemon,
// follows a symbolic link at dir: it archives the link's target (inside
// the container) under the link's name. So the stat it sends with the
// archive, taken before, must show a directory, not a link: a link at dir
// is refused before the archive is read. (The sandbox cannot replace dir,
// a mount point, after the service looked; the links under dir are
// archived as links.)
func (c *podmanContainer) CopyOut(ctx context.Context, dir string) (io.ReadCloser, error) {
	ctx = c.p.ctx(ctx)
	conn, err := bindings.GetClient(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := conn.DoRequest(ctx, nil, http.MethodGet, archiveEndpoint, url.Values{"path": {dir}}, nil, c.id)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, podmanNoSuchFile(resp.Process(nil))
	}
	if err := checkPodmanStat(&resp.Header, dir, fs.ModeDir); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp.Body, nil
}

// checkPodmanStat checks the stat the service sends with the archive of
// p: it must be the stat of a file of the type want (fs.ModeDir for a
// directory, 0 for a regular file), not of a symbolic link. (For a link,
// the service also sets the stat's LinkTarget to the link's target; else
// to p, or to p resolved when p is not on a mount of its own.) It fails
// with ErrNotRegular for a link, and for anything else when want is a
// regular file.
func checkPodmanStat(h *http.Header, p string, want fs.FileMode) error {
	info, err := copy.ExtractFileInfoFromHeader(h)
	if err != nil {
		return fmt.Errorf("decoding the service's stat of %s: %w", p, err)
	}
	if info == nil {
		return fmt.Errorf("the service sent no stat of %s", p)
	}
	if info.Mode&fs.ModeSymlink != 0 || info.LinkTarget != "" && path.Clean(info.LinkTarget) != p {
		return fmt.Errorf("%w: %s is a symbolic link (resolved to %s)", engine.ErrNotRegular, p, info.LinkTarget)
	}
	got := info.Mode.Type()
	if info.IsDir {
		got |= fs.ModeDir
	}
	switch {
	case got == want:
		return nil
	case want == fs.ModeDir:
		return fmt.Errorf("%s is not a directory (mode %v)", p, info.Mode)
	case got == fs.ModeDir:
		return fmt.Errorf("%w: %s is a directory", engine.ErrNotRegular, p)
	}
	return fmt.Errorf("%w: %s has mode %v", engine.ErrNotRegular, p, info.Mode)
}

// CopyIn implements lifecycle.Copier. The service creates a missing directory,
// so dir is checked first; the files keep the owners of the tar headers
// (copyUIDGID=false: the service gives them to the container's user by
// default).
func (c *podmanContainer) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	ctx = c.p.ctx(ctx)
	info, err := containers.Stat(ctx, c.id, dir)
	if errors.Is(err, copy.ErrENOENT) {
		// The service answers so for a missing container too.
		if ok, xerr := containers.Exists(ctx, c.id, nil); xerr == nil && !ok {
			return fmt.Errorf("the container is gone: %w", err)
		}
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	if err != nil {
		return fmt.Errorf("checking the directory: %w", err)
	}
	if info == nil || !info.IsDir {
		return errors.New("not a directory")
	}
	params, err := new(containers.CopyOptions).WithChown(false).ToParams()
	if err != nil {
		return err
	}
	params.Set("path", dir)
	conn, err := bindings.GetClient(ctx)
	if err != nil {
		return err
	}
	resp, err := conn.DoRequest(ctx, r, http.MethodPut, archiveEndpoint, params, nil, c.id)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return podmanNoSuchFile(resp.Process(nil))
}

// podmanNoSuchFile returns err, the service's answer to a call on a path
// of the container, wrapping fs.ErrNotExist when the path is missing (not
// the container: the service says "no such container" then).
func podmanNoSuchFile(err error) error {
	var em *errorhandling.ErrorModel
	if errors.As(err, &em) && em.Code() == http.StatusNotFound && strings.Contains(em.Because, "no such file") {
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return err
}
