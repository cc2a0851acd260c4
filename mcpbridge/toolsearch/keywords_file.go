package toolsearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/opfile"
)

// Bounds on the operator's search keywords.
const (
	maxKeywordsFileBytes = 1 << 20
	maxToolKeywords      = 100 // words one tool's entry keeps, at most
)

// The search keywords file's default names in the state directory: the
// deprecated one is read when the file of the new name does not exist.
const (
	keywordsFileName           = "search_keywords.json"
	deprecatedKeywordsFileName = "search_aliases.json"
)

// A KeywordsFile is the operator's search keywords file: the words people
// use for the tools of the operator's own servers, which no built-in
// table knows (toolKeywords), as JSON,
//
//	{"my-server": {"create_ticket": "bug ticket incident report", "close_ticket": ["resolve", "done"]}}
//
// keyed by the server's name in the configuration and the tool's name,
// the words a string or a list of strings. It is search_keywords.json in
// the state directory (search_aliases.json, deprecated, when that does
// not exist), or the file MCP_BRIDGE_SEARCH_KEYWORDS names, read again
// whenever it changes. A file that cannot be used is named in the
// search's notes and searched without; a search never fails for it.
type KeywordsFile = opfile.File[map[string]map[string]string] // server → tool → words

// NewKeywordsFile returns the search keywords file at path, or when path
// is empty, at search_keywords.json in stateDir (else the deprecated
// search_aliases.json, said once on log), where its absence means none.
func NewKeywordsFile(path, stateDir string, log *slog.Logger) *KeywordsFile {
	f := opfile.New(opfile.Options[map[string]map[string]string]{
		Path: path, Dir: stateDir, Defaults: []string{keywordsFileName, deprecatedKeywordsFileName},
		What: "search keywords file", Env: "MCP_BRIDGE_SEARCH_KEYWORDS", Limit: maxKeywordsFileBytes, Parse: parseKeywords,
		OnLoad: func(path string, m map[string]map[string]string, err error) {
			switch {
			case err != nil:
				log.Warn("search keywords cannot be used: searching without them", "file", path, "err", err)
			case m != nil:
				log.Info("search keywords loaded", "file", path, "servers", len(m))
			}
		},
	})
	if path == "" && filepath.Base(f.Path()) == deprecatedKeywordsFileName {
		log.Warn("the search keywords file's name "+deprecatedKeywordsFileName+" is deprecated: rename it "+keywordsFileName, "file", f.Path())
	}
	return f
}

// parseKeywords parses a search keywords file's JSON (see KeywordsFile).
func parseKeywords(data []byte, _ string) (map[string]map[string]string, error) {
	if len(data) > maxKeywordsFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxKeywordsFileBytes)
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
			if len(fields) > maxToolKeywords {
				fields = fields[:maxToolKeywords]
			}
			m[server][tool] = strings.Join(fields, " ")
		}
	}
	return m, nil
}
