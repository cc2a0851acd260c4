package lifecycle

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

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A Copier is the part of an Ops that copies files in and out
// of the container through the engine's archive API.
type Copier interface {
	// CopyOut returns the engine's tar archive of the directory dir
	// (clean, absolute): an entry for dir named after its base name, then
	// one for each file under dir, named base/path, the symbolic links
	// archived as links. It fails with an error wrapping fs.ErrNotExist
	// when nothing is at dir. An engine that would archive the target of a
	// link at dir refuses one, with ErrNotRegular; for the others, the
	// link is the archive's only entry.
	CopyOut(ctx context.Context, dir string) (io.ReadCloser, error)
	// CopyIn extracts the tar stream r into the directory dir (clean,
	// absolute), keeping the owners of its headers; it fails with an
	// error wrapping fs.ErrNotExist when dir is missing.
	CopyIn(ctx context.Context, dir string, r io.Reader) error
}

// OpenFileIn implements Files.OpenFile on container id through c.
func OpenFileIn(ctx context.Context, c Copier, id, root, rel string, max int64) (io.ReadCloser, int64, error) {
	dir, err := sandboxPath(root)
	if err == nil {
		err = checkRelPath(rel)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("opening %q under %q in container %s: %w", rel, root, ShortID(id), err)
	}
	name := dir + "/" + rel
	rc, err := c.CopyOut(ctx, dir)
	if err != nil {
		return nil, 0, fmt.Errorf("copying %s from container %s: %w", dir, ShortID(id), err)
	}
	f, size, err := openTarFile(rc, path.Base(dir), rel, max)
	if err != nil {
		rc.Close()
		return nil, 0, fmt.Errorf("opening %s in container %s: %w", name, ShortID(id), err)
	}
	return f, size, nil
}

// CopyInto implements Files.CopyIn on container id through c.
func CopyInto(ctx context.Context, c Copier, id, dir string, r io.Reader) error {
	p, err := sandboxPath(dir)
	if err != nil {
		return fmt.Errorf("copying into %q of container %s: %w", dir, ShortID(id), err)
	}
	if err := c.CopyIn(ctx, p, r); err != nil {
		return fmt.Errorf("copying into %s of container %s: %w", p, ShortID(id), err)
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
// whose base name is base (see Copier.copyOut), and returns the
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
			return nil, 0, fmt.Errorf("%w: %s", engine.ErrNotRegular, describeTarType(h))
		case name == rel && max > 0 && h.Size > max:
			return nil, 0, fmt.Errorf("%w: %d bytes, limit %d", engine.ErrFileTooLarge, h.Size, max)
		case name == rel:
			return &tarFile{r: tr, c: rc}, h.Size, nil
		case h.Typeflag == tar.TypeSymlink && (name == "" || strings.HasPrefix(rel, name+"/")):
			return nil, 0, fmt.Errorf("%w: it lies under %s, a %s", engine.ErrNotRegular, path.Join(base, name), describeTarType(h))
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
