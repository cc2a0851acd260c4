package mcpbridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Bounds on the operator's search aliases.
const (
	maxAliasFileBytes = 1 << 20
	maxAliasWords     = 100 // words one tool's entry keeps, at most
)

// An aliasFile is the operator's search aliases: the words people use for
// the tools of the operator's own servers, which no built-in table knows
// (toolAliases), as JSON,
//
//	{"my-server": {"create_ticket": "bug ticket incident report", "close_ticket": ["resolve", "done"]}}
//
// keyed by the server's name in the configuration and the tool's name,
// the words a string or a list of strings. It is search_aliases.json in
// the state directory, or the file MCP_BRIDGE_SEARCH_ALIASES names, read
// again whenever it changes. A file that cannot be used is named in the
// search's notes and searched without; a search never fails for it.
type aliasFile struct {
	path     string
	explicit bool // named by the operator, not the default location
	log      *slog.Logger

	mu    sync.Mutex
	stamp fileStamp
	read  bool
	m     map[string]map[string]string // server → tool → words
	err   error
}

// newAliasFile returns the aliases' file at path, or when path is empty,
// at search_aliases.json in stateDir, where its absence means none.
func newAliasFile(path, stateDir string, log *slog.Logger) *aliasFile {
	f := &aliasFile{path: path, explicit: path != "", log: log}
	if path == "" {
		f.path = filepath.Join(stateDir, "search_aliases.json")
	}
	return f
}

// current returns the aliases in force by server and tool: nil with a nil
// error when there are none, else the parsed file, or an error that says
// why the file cannot be used.
func (f *aliasFile) current() (map[string]map[string]string, error) {
	if f == nil {
		return nil, nil
	}
	st, statErr := stampOf(f.path)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.read && statErr == nil && st == f.stamp {
		return f.m, f.err
	}
	f.read, f.stamp = true, st
	f.m, f.err = f.load(st, statErr)
	switch {
	case f.err != nil:
		f.log.Warn("search aliases cannot be used: searching without them", "file", f.path, "err", f.err)
	case f.m != nil:
		f.log.Info("search aliases loaded", "file", f.path, "servers", len(f.m))
	}
	return f.m, f.err
}

// load reads and parses the file of stamp st.
func (f *aliasFile) load(st fileStamp, statErr error) (map[string]map[string]string, error) {
	if statErr != nil {
		return nil, fmt.Errorf("search aliases file %s: %v", f.path, statErr)
	}
	if !st.found {
		if f.explicit {
			return nil, fmt.Errorf("search aliases file %s does not exist (MCP_BRIDGE_SEARCH_ALIASES names it)", f.path)
		}
		return nil, nil
	}
	file, err := os.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("search aliases file %s: %v", f.path, err)
	}
	defer file.Close()
	if fi, err := file.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("search aliases file %s is not a regular file", f.path)
	}
	data, err := io.ReadAll(io.LimitReader(file, maxAliasFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading search aliases file %s: %v", f.path, err)
	}
	m, err := parseAliases(data)
	if err != nil {
		return nil, fmt.Errorf("search aliases file %s is invalid: %v", f.path, err)
	}
	return m, nil
}

// parseAliases parses an aliases file's JSON (see aliasFile).
func parseAliases(data []byte) (map[string]map[string]string, error) {
	if len(data) > maxAliasFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxAliasFileBytes)
	}
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf(`want {"server": {"tool": "words" or ["word", ...]}}: %v`, err)
	}
	m := make(map[string]map[string]string, len(raw))
	for server, tools := range raw {
		if server == "" {
			return nil, errors.New("a server with an empty name")
		}
		m[server] = make(map[string]string, len(tools))
		for tool, words := range tools {
			if tool == "" {
				return nil, fmt.Errorf("server %q: a tool with an empty name", server)
			}
			var text string
			if err := json.Unmarshal(words, &text); err != nil {
				var list []string
				if err := json.Unmarshal(words, &list); err != nil {
					return nil, fmt.Errorf("server %q, tool %q: want a string of words or a list of strings", server, tool)
				}
				text = strings.Join(list, " ")
			}
			fields := strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' })
			if len(fields) > maxAliasWords {
				fields = fields[:maxAliasWords]
			}
			m[server][tool] = strings.Join(fields, " ")
		}
	}
	return m, nil
}
