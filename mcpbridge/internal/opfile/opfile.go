// Package opfile reads an operator's file (the tool policy, the search
// keywords): a value parsed from a file the operator edits, parsed again
// whenever the file changes and otherwise kept, so that an edit is seen
// at the next use without a restart.
package opfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Options configure a File. Parse is required; every other zero value is
// a documented default.
type Options[T any] struct {
	// Path is the file the operator named (Env names it). Zero: the first
	// of Defaults that exists in Dir, else the first of Defaults, where
	// the file's absence means none.
	Path string
	// Dir and Defaults say where the file lives when Path is empty.
	Dir      string
	Defaults []string
	// What the messages call the file: "policy file". Zero: "file".
	What string
	// Env is the variable that names the file, said when a named file is
	// missing.
	Env string
	// Limit bounds what is read of the file: at most Limit+1 bytes reach
	// Parse, which tells an oversized file by its length. Zero: 1 MiB.
	Limit int64
	// Parse turns the file's bytes into its value (path: the file's, for
	// a format chosen by its name); its error says what is wrong, and is
	// reported as the file being invalid.
	Parse func(data []byte, path string) (T, error)
	// MissingRefusal is said after the message that a named file is
	// missing, InvalidRefusal before the parser's error ("is
	// invalid<InvalidRefusal>: …"): what the owner does meanwhile. Zero:
	// nothing.
	MissingRefusal, InvalidRefusal string
	// Sentinel, when set, is wrapped by every error of the file
	// ("<Sentinel>: <message>"), for errors.Is. Zero: errors are plain.
	Sentinel error
	// OnLoad is called under the file's lock each time the file was read
	// again (or found missing), with its path and what Current returns;
	// owners log there. Zero: nothing.
	OnLoad func(path string, v T, err error)
}

// A File is an operator's file, parsed again whenever it changes (its
// size, time or inode). Its methods are safe for concurrent use; a nil
// *File has no value.
type File[T any] struct {
	opts     Options[T]
	path     string
	explicit bool

	mu    sync.Mutex
	stamp stamp
	read  bool // stamp, v and err are of a read (or of the file's absence)
	v     T
	err   error
}

// New returns the file opts describe; nothing is read until Current.
func New[T any](opts Options[T]) *File[T] {
	f := &File[T]{opts: opts, path: opts.Path, explicit: opts.Path != ""}
	if f.opts.What == "" {
		f.opts.What = "file"
	}
	if f.opts.Limit <= 0 {
		f.opts.Limit = 1 << 20
	}
	if !f.explicit && len(opts.Defaults) > 0 {
		f.path = filepath.Join(opts.Dir, opts.Defaults[0])
		for _, name := range opts.Defaults {
			if _, err := os.Stat(filepath.Join(opts.Dir, name)); err == nil {
				f.path = filepath.Join(opts.Dir, name)
				break
			}
		}
	}
	return f
}

// Path returns the file's path: the named one, or the default chosen.
func (f *File[T]) Path() string { return f.path }

// Current returns the file's value as it is now: the zero T with a nil
// error when there is none (no file at a default place), else the parsed
// file, or an error that says why the file cannot be used.
func (f *File[T]) Current() (T, error) {
	if f == nil {
		var zero T
		return zero, nil
	}
	st, statErr := stampOf(f.path)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.read && statErr == nil && st == f.stamp {
		return f.v, f.err
	}
	f.read, f.stamp = true, st
	f.v, f.err = f.load(st, statErr)
	if f.opts.OnLoad != nil {
		f.opts.OnLoad(f.path, f.v, f.err)
	}
	return f.v, f.err
}

// load reads and parses the file of stamp st. Its errors name the file
// by its base name: sandbox code sees them (a proxied call or a
// connection refused by a broken policy), and where the file is belongs
// to the operator, whose log OnLoad gives the path.
func (f *File[T]) load(st stamp, statErr error) (v T, err error) {
	o := &f.opts
	name := filepath.Base(f.path)
	if statErr != nil {
		return v, f.fail("%s %s: %v", o.What, name, bare(statErr))
	}
	if !st.found {
		if f.explicit {
			return v, f.fail("%s %s does not exist (%s names it)%s", o.What, name, o.Env, o.MissingRefusal)
		}
		return v, nil
	}
	data, err := readFile(f.path, o.What, o.Limit)
	if err != nil {
		return v, f.fail("%v", err)
	}
	v, err = o.Parse(data, f.path)
	if err != nil {
		var zero T
		return zero, f.fail("%s %s is invalid%s: %v", o.What, name, o.InvalidRefusal, err)
	}
	return v, nil
}

// bare returns err without the path a *fs.PathError adds.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fail formats an error of the file, wrapping the sentinel when set.
func (f *File[T]) fail(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if f.opts.Sentinel != nil {
		return fmt.Errorf("%w: %w", f.opts.Sentinel, err)
	}
	return err
}

// A stamp tells one version of a file from another.
type stamp struct {
	size  int64
	mtime time.Time
	ino   uint64
	found bool
}

// stampOf returns the stamp of the file at path; a missing file has a
// zero stamp and no error.
func stampOf(path string) (stamp, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return stamp{}, nil
	}
	if err != nil {
		return stamp{}, err
	}
	return stamp{size: fi.Size(), mtime: fi.ModTime(), ino: inodeOf(fi), found: true}, nil
}

// inodeOf returns fi's inode number, where the system reports one: a file
// replaced by rename with the same size and time is still told apart.
func inodeOf(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// readFile reads the regular file at path, at most limit+1 bytes (a
// caller tells an oversized file by its length); its errors call the
// file what and name it by its base name.
func readFile(path, what string, limit int64) ([]byte, error) {
	name := filepath.Base(path)
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", what, name, bare(err))
	}
	defer file.Close()
	if fi, err := file.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %s is not a regular file", what, name)
	}
	data, err := io.ReadAll(io.LimitReader(file, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %v", what, name, bare(err))
	}
	return data, nil
}
