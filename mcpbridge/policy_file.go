package mcpbridge

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// ErrPolicy reports a proxied call, tool or server that the tool policy
// refuses, or a policy file that cannot be used (then everything is
// refused).
var ErrPolicy = errors.New("refused by the tool policy")

// A policyFile is the policy file, read again whenever it changes (its
// size, time or inode). A missing file that was named explicitly, or one
// that does not parse, refuses every proxied call and says why: a broken
// policy never falls open.
type policyFile struct {
	path     string
	explicit bool // named by the operator, not the default location
	log      *slog.Logger

	mu    sync.Mutex
	stamp fileStamp
	read  bool // stamp, p and err are of a read (or of the file's absence)
	p     *policy
	err   error
}

// A fileStamp tells one version of a file from another.
type fileStamp struct {
	size  int64
	mtime time.Time
	ino   uint64
	found bool
}

// newPolicyFile returns the policy file at path, or when path is empty,
// at policy.json (else policy.toml) in stateDir, where its absence means
// no policy.
func newPolicyFile(path, stateDir string, log *slog.Logger) *policyFile {
	f := &policyFile{path: path, explicit: path != "", log: log}
	if path == "" {
		f.path = filepath.Join(stateDir, "policy.json")
		if _, err := os.Stat(f.path); errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Stat(filepath.Join(stateDir, "policy.toml")); err == nil {
				f.path = filepath.Join(stateDir, "policy.toml")
			}
		}
	}
	return f
}

// current returns the policy in force: nil with a nil error when there is
// none, else the parsed file, or an error wrapping ErrPolicy when it
// cannot be used.
func (f *policyFile) current() (*policy, error) {
	if f == nil {
		return nil, nil
	}
	st, statErr := stampOf(f.path)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.read && statErr == nil && st == f.stamp {
		return f.p, f.err
	}
	f.read, f.stamp = true, st
	f.p, f.err = f.load(st, statErr)
	switch {
	case f.err != nil:
		f.log.Error("the tool policy cannot be used: every proxied tool call is refused until it is fixed", "file", f.path, "err", f.err)
	case f.p != nil:
		f.log.Info("tool policy loaded", "file", f.path, "servers", len(f.p.Servers), "max_tool_calls", f.p.maxToolCalls())
	}
	return f.p, f.err
}

// load reads and parses the file of stamp st.
func (f *policyFile) load(st fileStamp, statErr error) (*policy, error) {
	if statErr != nil {
		return nil, fmt.Errorf("%w: policy file %s: %v", ErrPolicy, f.path, statErr)
	}
	if !st.found {
		if f.explicit {
			return nil, fmt.Errorf("%w: policy file %s does not exist (MCP_BRIDGE_POLICY names it); "+
				"every proxied tool call is refused until it does", ErrPolicy, f.path)
		}
		return nil, nil
	}
	file, err := os.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("%w: policy file %s: %v", ErrPolicy, f.path, err)
	}
	defer file.Close()
	if fi, err := file.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: policy file %s is not a regular file", ErrPolicy, f.path)
	}
	data, err := io.ReadAll(io.LimitReader(file, maxPolicyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading policy file %s: %v", ErrPolicy, f.path, err)
	}
	p, err := parsePolicy(data, f.path)
	if err != nil {
		return nil, fmt.Errorf("%w: policy file %s is invalid, so every proxied tool call is refused: %v", ErrPolicy, f.path, err)
	}
	return p, nil
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
