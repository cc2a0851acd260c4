package engine

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// Files is implemented by sandboxes whose files the host can read and
// write through the engine's archive API.
//
// The context of OpenFile bounds the reading of the reader it returns
// too. The engine works as root inside the container, where it would
// resolve the symbolic links the sandbox left on the directories of a
// path (a link OutDir/sub to /etc would have OutDir/sub/shadow read from
// the image's /etc): so OpenFile never names a path under root to the
// engine, it reads the file out of the archive of root, where links are
// links.
type Files interface {
	// OpenFile opens the regular file rel (a clean relative slash path,
	// no ".." element) under the directory root of the sandbox, which must
	// be a directory the sandbox cannot replace, such as a mount point
	// (OutDir). The engine archives root, and the file is found in that
	// archive: symbolic links under root are archived as links, never
	// followed, so no link can lead the read outside root. It returns the
	// file's content and size, and fails with ErrNotRegular when rel is a
	// link, directory or other non-regular file (or lies under a link),
	// with an error wrapping fs.ErrNotExist when rel is not in the archive,
	// and with ErrFileTooLarge when the file is larger than max (max <= 0:
	// no limit). The reader yields exactly size bytes; the caller closes it.
	//
	// The archive holds the files of root that sort before rel too: the
	// engine sends them and they are skipped, so their bytes count in the
	// time of the call. A file the engine archives as a hard link to one
	// archived before it is not regular.
	OpenFile(ctx context.Context, root, rel string, max int64) (io.ReadCloser, int64, error)
	// CopyIn extracts the tar stream r into the existing directory dir of
	// the sandbox, keeping the owners and modes of its headers.
	CopyIn(ctx context.Context, dir string, r io.Reader) error
}

var _ Files = (*containerSandbox)(nil)

// A fileCopier is the part of a containerOps that copies files in and out
// of the container through the engine's archive API.
type fileCopier interface {
	// copyOut returns the engine's tar archive of the directory dir
	// (clean, absolute): an entry for dir named after its base name, then
	// one for each file under dir, named base/path, the symbolic links
	// archived as links. It fails with an error wrapping fs.ErrNotExist
	// when nothing is at dir. An engine that would archive the target of a
	// link at dir refuses one, with ErrNotRegular; for the others, the
	// link is the archive's only entry.
	copyOut(ctx context.Context, dir string) (io.ReadCloser, error)
	// copyIn extracts the tar stream r into the directory dir (clean,
	// absolute), keeping the owners of its headers; it fails with an
	// error wrapping fs.ErrNotExist when dir is missing.
	copyIn(ctx context.Context, dir string, r io.Reader) error
}

// OpenFile implements Files.
func (s *containerSandbox) OpenFile(ctx context.Context, root, rel string, max int64) (io.ReadCloser, int64, error) {
	if s.closed.Load() {
		return nil, 0, fmt.Errorf("opening %s in container %s: sandbox %w", rel, shortID(s.id), ErrClosed)
	}
	return openFileIn(ctx, s.c, s.id, root, rel, max)
}

// openFileIn implements Files.OpenFile on container id through c.
func openFileIn(ctx context.Context, c fileCopier, id, root, rel string, max int64) (io.ReadCloser, int64, error) {
	dir, err := sandboxPath(root)
	if err == nil {
		err = checkRelPath(rel)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("opening %q under %q in container %s: %w", rel, root, shortID(id), err)
	}
	name := dir + "/" + rel
	rc, err := c.copyOut(ctx, dir)
	if err != nil {
		return nil, 0, fmt.Errorf("copying %s from container %s: %w", dir, shortID(id), err)
	}
	f, size, err := openTarFile(rc, path.Base(dir), rel, max)
	if err != nil {
		rc.Close()
		return nil, 0, fmt.Errorf("opening %s in container %s: %w", name, shortID(id), err)
	}
	return f, size, nil
}

// CopyIn implements Files.
func (s *containerSandbox) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	if s.closed.Load() {
		return fmt.Errorf("copying into %s of container %s: sandbox %w", dir, shortID(s.id), ErrClosed)
	}
	return copyInto(ctx, s.c, s.id, dir, r)
}

// copyInto implements Files.CopyIn on container id through c.
func copyInto(ctx context.Context, c fileCopier, id, dir string, r io.Reader) error {
	p, err := sandboxPath(dir)
	if err != nil {
		return fmt.Errorf("copying into %q of container %s: %w", dir, shortID(id), err)
	}
	if err := c.copyIn(ctx, p, r); err != nil {
		return fmt.Errorf("copying into %s of container %s: %w", p, shortID(id), err)
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

// checkRelPath checks that rel is a clean relative slash path below its
// directory: not empty, not ".", with no NUL byte and no ".." element.
func checkRelPath(rel string) error {
	switch {
	case rel == "" || rel == ".":
		return errors.New("relative path names no file")
	case path.IsAbs(rel):
		return errors.New("relative path is absolute")
	case strings.ContainsRune(rel, 0):
		return errors.New("relative path holds a NUL byte")
	case slices.Contains(strings.Split(rel, "/"), ".."):
		return errors.New(`relative path holds ".."`)
	case path.Clean(rel) != rel:
		return errors.New("relative path is not clean")
	}
	return nil
}

// openTarFile finds the regular file rel of at most max bytes (max <= 0:
// no limit) in the tar stream rc, an engine's archive of a directory
// whose base name is base (see fileCopier.copyOut), and returns the
// file's content, which closes rc, and its size. The entries before the
// file are skipped; a symbolic link on a directory of rel, as on rel,
// fails with ErrNotRegular.
func openTarFile(rc io.ReadCloser, base, rel string, max int64) (io.ReadCloser, int64, error) {
	tr := tar.NewReader(rc)
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) && n == 0 {
			return nil, 0, errors.New("reading archive: the engine sent an empty archive")
		}
		if errors.Is(err, io.EOF) {
			return nil, 0, fmt.Errorf("%w: not in the engine's archive of %s", fs.ErrNotExist, base)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("reading archive: %w", err)
		}
		name, ok := archivedPath(h.Name, base)
		if !ok {
			return nil, 0, fmt.Errorf("reading archive: the engine's archive of %s holds %q", base, h.Name)
		}
		switch {
		case name == rel && h.Typeflag != tar.TypeReg:
			return nil, 0, fmt.Errorf("%w: %s", ErrNotRegular, describeTarType(h))
		case name == rel && max > 0 && h.Size > max:
			return nil, 0, fmt.Errorf("%w: %d bytes, limit %d", ErrFileTooLarge, h.Size, max)
		case name == rel:
			return &tarFile{r: tr, c: rc}, h.Size, nil
		case h.Typeflag == tar.TypeSymlink && (name == "" || strings.HasPrefix(rel, name+"/")):
			return nil, 0, fmt.Errorf("%w: it lies under %s, a %s", ErrNotRegular, path.Join(base, name), describeTarType(h))
		}
	}
}

// archivedPath returns the path of the file an entry of an archive of
// the directory base names, relative to base ("" for base itself), and
// whether the entry lies in base.
func archivedPath(entry, base string) (string, bool) {
	first, rest, _ := strings.Cut(path.Clean(entry), "/")
	return rest, first == base
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
