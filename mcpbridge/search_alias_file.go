package mcpbridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
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
	file     watchedFile[map[string]map[string]string] // server → tool → words
	explicit bool                                      // named by the operator, not the default location
	log      *slog.Logger
}

// newAliasFile returns the aliases' file at path, or when path is empty,
// at search_aliases.json in stateDir, where its absence means none.
func newAliasFile(path, stateDir string, log *slog.Logger) *aliasFile {
	f := &aliasFile{explicit: path != "", log: log}
	if path == "" {
		path = filepath.Join(stateDir, "search_aliases.json")
	}
	f.file.path = path
	return f
}

// current returns the aliases in force by server and tool: nil with a nil
// error when there are none, else the parsed file, or an error that says
// why the file cannot be used.
func (f *aliasFile) current() (map[string]map[string]string, error) {
	if f == nil {
		return nil, nil
	}
	m, loaded, err := f.file.get(f.load)
	if loaded {
		switch {
		case err != nil:
			f.log.Warn("search aliases cannot be used: searching without them", "file", f.file.path, "err", err)
		case m != nil:
			f.log.Info("search aliases loaded", "file", f.file.path, "servers", len(m))
		}
	}
	return m, err
}

// load reads and parses the file of stamp st.
func (f *aliasFile) load(st fileStamp, statErr error) (map[string]map[string]string, error) {
	path := f.file.path
	if statErr != nil {
		return nil, fmt.Errorf("search aliases file %s: %v", path, statErr)
	}
	if !st.found {
		if f.explicit {
			return nil, fmt.Errorf("search aliases file %s does not exist (MCP_BRIDGE_SEARCH_ALIASES names it)", path)
		}
		return nil, nil
	}
	data, err := readOperatorFile(path, "search aliases file", maxAliasFileBytes)
	if err != nil {
		return nil, err
	}
	m, err := parseAliases(data)
	if err != nil {
		return nil, fmt.Errorf("search aliases file %s is invalid: %v", path, err)
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
