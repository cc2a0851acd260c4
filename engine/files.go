package engine

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
)

// Files is implemented by sandboxes whose files the host can read and
// write through the engine's archive API.
//
// The context of OpenFile bounds the reading of the reader it returns
// too. The engine, as root, resolves the symbolic links of the
// directories on a path within the container: a sandbox that makes
// OutDir/sub a link to /etc has OutDir/sub/shadow read from the image's
// /etc. Callers should open only files whose directory the sandbox cannot
// replace, such as the files of OutDir itself.
type Files interface {
	// OpenFile opens the regular file at path (absolute, in the sandbox)
	// and returns its content and size. It fails with ErrNotRegular for a
	// symbolic link, directory or other non-regular file, with an error
	// wrapping fs.ErrNotExist when nothing is there, and with
	// ErrFileTooLarge when the file is larger than max (max <= 0: no limit).
	// The reader yields exactly size bytes (fewer is an error); the caller closes it.
	OpenFile(ctx context.Context, path string, max int64) (io.ReadCloser, int64, error)
	// CopyIn extracts the tar stream r into the existing directory dir of
	// the sandbox, keeping the owners and modes of its headers.
	CopyIn(ctx context.Context, dir string, r io.Reader) error
}

var _ Files = (*containerSandbox)(nil)

// A fileCopier is the part of a containerOps that copies files in and out
// of the container through the engine's archive API.
type fileCopier interface {
	// copyOut returns the engine's tar archive of path (clean, absolute),
	// and fails with an error wrapping fs.ErrNotExist when nothing is
	// there, or ErrNotRegular when the engine reports something other
	// than a file. The tar stream is what counts: the sandbox can change
	// the file between any check and the copy.
	copyOut(ctx context.Context, path string) (io.ReadCloser, error)
	// copyIn extracts the tar stream r into the directory dir (clean,
	// absolute), keeping the owners of its headers; it fails with an
	// error wrapping fs.ErrNotExist when dir is missing.
	copyIn(ctx context.Context, dir string, r io.Reader) error
}

// OpenFile implements Files.
func (s *containerSandbox) OpenFile(ctx context.Context, file string, max int64) (io.ReadCloser, int64, error) {
	p, err := sandboxPath(file)
	if err != nil {
		return nil, 0, fmt.Errorf("opening %q in container %s: %w", file, shortID(s.id), err)
	}
	if s.closed.Load() {
		return nil, 0, fmt.Errorf("opening %s in container %s: sandbox %w", p, shortID(s.id), ErrClosed)
	}
	rc, err := s.c.copyOut(ctx, p)
	if err != nil {
		return nil, 0, fmt.Errorf("copying %s from container %s: %w", p, shortID(s.id), err)
	}
	f, size, err := openTarFile(rc, path.Base(p), max)
	if err != nil {
		rc.Close()
		return nil, 0, fmt.Errorf("opening %s in container %s: %w", p, shortID(s.id), err)
	}
	return f, size, nil
}

// CopyIn implements Files.
func (s *containerSandbox) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	p, err := sandboxPath(dir)
	if err != nil {
		return fmt.Errorf("copying into %q of container %s: %w", dir, shortID(s.id), err)
	}
	if s.closed.Load() {
		return fmt.Errorf("copying into %s of container %s: sandbox %w", p, shortID(s.id), ErrClosed)
	}
	if err := s.c.copyIn(ctx, p, r); err != nil {
		return fmt.Errorf("copying into %s of container %s: %w", p, shortID(s.id), err)
	}
	return nil
}

// sandboxPath returns p cleaned, once checked: absolute, not the root,
// with no NUL byte and no ".." element even before cleaning, so that a
// caller's check of the path it passed holds for the path used.
func sandboxPath(p string) (string, error) {
	switch {
	case !path.IsAbs(p):
		return "", errors.New("path is not absolute")
	case strings.ContainsRune(p, 0):
		return "", errors.New("path holds a NUL byte")
	case slices.Contains(strings.Split(p, "/"), ".."):
		return "", errors.New(`path holds ".."`)
	}
	p = path.Clean(p)
	if p == "/" {
		return "", errors.New("path is the root directory")
	}
	return p, nil
}

// openTarFile reads the first header of the tar stream rc, which must be
// the regular file name of at most max bytes (max <= 0: no limit), and
// returns the file's content, which closes rc, and its size.
func openTarFile(rc io.ReadCloser, name string, max int64) (io.ReadCloser, int64, error) {
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if errors.Is(err, io.EOF) {
		return nil, 0, errors.New("reading archive: the engine sent an empty archive")
	}
	if err != nil {
		return nil, 0, fmt.Errorf("reading archive: %w", err)
	}
	if h.Typeflag != tar.TypeReg {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotRegular, describeTarType(h))
	}
	if got := path.Clean(h.Name); got != name {
		return nil, 0, fmt.Errorf("%w: the engine's archive holds %q, not %q", ErrNotRegular, h.Name, name)
	}
	if max > 0 && h.Size > max {
		return nil, 0, fmt.Errorf("%w: %d bytes, limit %d", ErrFileTooLarge, h.Size, max)
	}
	return &tarFile{r: tr, c: rc}, h.Size, nil
}

// describeTarType names the kind of file of a tar header.
func describeTarType(h *tar.Header) string {
	switch h.Typeflag {
	case tar.TypeSymlink:
		return "symbolic link to " + h.Linkname
	case tar.TypeLink:
		return "hard link to " + h.Linkname
	case tar.TypeDir:
		return "directory"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "named pipe"
	}
	return fmt.Sprintf("tar entry of type %q", h.Typeflag)
}

// A tarFile is the content of one entry of a tar stream: it reads the
// entry's bytes, failing when the stream ends before them, and closes the
// stream.
type tarFile struct {
	r io.Reader
	c io.Closer
}

func (f *tarFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *tarFile) Close() error               { return f.c.Close() }
