package mcpbridge

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// A watchedFile is a value parsed from an operator's file (the tool
// policy, the search aliases), parsed again whenever the file changes
// (its size, time or inode) and otherwise kept, so that an edit is seen
// at the next use without a restart.
type watchedFile[T any] struct {
	path string

	mu    sync.Mutex
	stamp fileStamp
	read  bool // stamp, v and err are of a read (or of the file's absence)
	v     T
	err   error
}

// get returns the file's value as it is now. load runs when the file
// changed since the last get (with its new stamp, or the error of looking
// at it) and its result is kept; loaded reports whether it ran.
func (w *watchedFile[T]) get(load func(st fileStamp, statErr error) (T, error)) (v T, loaded bool, err error) {
	st, statErr := stampOf(w.path)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.read && statErr == nil && st == w.stamp {
		return w.v, false, w.err
	}
	w.read, w.stamp = true, st
	w.v, w.err = load(st, statErr)
	return w.v, true, w.err
}

// A fileStamp tells one version of a file from another.
type fileStamp struct {
	size  int64
	mtime time.Time
	ino   uint64
	found bool
}

// stampOf returns the stamp of the file at path; a missing file has a
// zero stamp and no error.
func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileStamp{}, nil
	}
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{size: fi.Size(), mtime: fi.ModTime(), ino: inodeOf(fi), found: true}, nil
}

// inodeOf returns fi's inode number, where the system reports one: a file
// replaced by rename with the same size and time is still told apart.
func inodeOf(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// readOperatorFile reads the regular file at path, at most limit+1 bytes
// (a caller tells an oversized file by its length); its errors call the
// file what ("policy file", "search aliases file").
func readOperatorFile(path, what string, limit int64) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", what, path, err)
	}
	defer file.Close()
	if fi, err := file.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %s is not a regular file", what, path)
	}
	data, err := io.ReadAll(io.LimitReader(file, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %v", what, path, err)
	}
	return data, nil
}
