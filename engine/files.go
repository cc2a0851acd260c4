package engine

import (
	"context"
	"io"
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
