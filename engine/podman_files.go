//go:build remote

package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/copy"
	"github.com/containers/podman/v5/pkg/errorhandling"
)

// archiveEndpoint is the service's archive API of a container, as the
// bindings' CopyToArchive and CopyFromArchiveWithOptions call it. They
// are not called themselves: the first hides the stat the service sends
// with the archive, the second replaces the service's error by the HTTP
// status ("500 Internal Server Error" for a full mount).
const archiveEndpoint = "/containers/%s/archive"

// copyOut implements fileCopier. The service, unlike Docker's daemon,
// follows a symbolic link at path: it archives the link's target (inside
// the container) under the link's name, as a file. So the stat it sends
// with the archive, taken before, must show a file, not a link: a link
// at path is refused before the archive is read. A sandbox that replaces
// its file by a link after the service looked can still have the link's
// target read; so can one that puts a link on a directory of path, which
// both engines resolve (see Files).
func (c *podmanContainer) copyOut(ctx context.Context, p string) (io.ReadCloser, error) {
	ctx = c.p.ctx(ctx)
	conn, err := bindings.GetClient(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := conn.DoRequest(ctx, nil, http.MethodGet, archiveEndpoint, url.Values{"path": {p}}, nil, c.id)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, podmanNoSuchFile(resp.Process(nil))
	}
	if err := checkPodmanStat(&resp.Header, p); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp.Body, nil
}

// checkPodmanStat checks the stat the service sends with the archive of
// p: it must be the stat of a file, not of a link. (For a link, the
// service also sets the stat's LinkTarget to the link's target; else to
// p, or to p resolved when p is not on a mount of its own.)
func checkPodmanStat(h *http.Header, p string) error {
	info, err := copy.ExtractFileInfoFromHeader(h)
	if err != nil {
		return fmt.Errorf("decoding the service's stat of the path: %w", err)
	}
	switch {
	case info == nil:
		return errors.New("the service sent no stat of the path")
	case info.Mode&os.ModeSymlink != 0 || info.LinkTarget != "" && path.Clean(info.LinkTarget) != p:
		return fmt.Errorf("%w: symbolic link (resolved to %s)", ErrNotRegular, info.LinkTarget)
	case info.IsDir:
		return fmt.Errorf("%w: directory", ErrNotRegular)
	case !info.Mode.IsRegular():
		return fmt.Errorf("%w: mode %v", ErrNotRegular, info.Mode)
	}
	return nil
}

// copyIn implements fileCopier. The service creates a missing directory,
// so dir is checked first; the files keep the owners of the tar headers
// (copyUIDGID=false: the service gives them to the container's user by
// default).
func (c *podmanContainer) copyIn(ctx context.Context, dir string, r io.Reader) error {
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
