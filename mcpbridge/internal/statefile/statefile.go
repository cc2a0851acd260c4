// Package statefile writes the files the bridge keeps in its state
// directory (memories, saved tools, the servers' catalog), which several
// bridges may share.
package statefile

import (
	"os"
	"path/filepath"
)

// Write writes data to path atomically, mode 0600: through a temporary
// file of its own in path's directory (made, mode 0700, when missing),
// renamed into place, so that bridges sharing the state directory never
// write one temporary file together and a reader never sees half a file.
func Write(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone already once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
