package mcpbridge

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
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
	file     watchedFile[*policy]
	explicit bool // named by the operator, not the default location
	log      *slog.Logger
}

// newPolicyFile returns the policy file at path, or when path is empty,
// at policy.json (else policy.toml) in stateDir, where its absence means
// no policy.
func newPolicyFile(path, stateDir string, log *slog.Logger) *policyFile {
	f := &policyFile{explicit: path != "", log: log}
	if path == "" {
		path = filepath.Join(stateDir, "policy.json")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Stat(filepath.Join(stateDir, "policy.toml")); err == nil {
				path = filepath.Join(stateDir, "policy.toml")
			}
		}
	}
	f.file.path = path
	return f
}

// current returns the policy in force: nil with a nil error when there is
// none, else the parsed file, or an error wrapping ErrPolicy when it
// cannot be used.
func (f *policyFile) current() (*policy, error) {
	if f == nil {
		return nil, nil
	}
	p, loaded, err := f.file.get(f.load)
	if loaded {
		switch {
		case err != nil:
			f.log.Error("the tool policy cannot be used: every proxied tool call is refused until it is fixed", "file", f.file.path, "err", err)
		case p != nil:
			f.log.Info("tool policy loaded", "file", f.file.path, "servers", len(p.Servers), "max_tool_calls", p.maxToolCalls())
		}
	}
	return p, err
}

// load reads and parses the file of stamp st.
func (f *policyFile) load(st fileStamp, statErr error) (*policy, error) {
	path := f.file.path
	if statErr != nil {
		return nil, fmt.Errorf("%w: policy file %s: %v", ErrPolicy, path, statErr)
	}
	if !st.found {
		if f.explicit {
			return nil, fmt.Errorf("%w: policy file %s does not exist (MCP_BRIDGE_POLICY names it); "+
				"every proxied tool call is refused until it does", ErrPolicy, path)
		}
		return nil, nil
	}
	data, err := readOperatorFile(path, "policy file", maxPolicyBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	p, err := parsePolicy(data, path)
	if err != nil {
		return nil, fmt.Errorf("%w: policy file %s is invalid, so every proxied tool call is refused: %v", ErrPolicy, path, err)
	}
	return p, nil
}
