package mcpbridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/opfile"
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
type aliasFile = opfile.File[map[string]map[string]string] // server → tool → words

// newAliasFile returns the aliases' file at path, or when path is empty,
// at search_aliases.json in stateDir, where its absence means none.
func newAliasFile(path, stateDir string, log *slog.Logger) *aliasFile {
	return opfile.New(opfile.Options[map[string]map[string]string]{
		Path: path, Dir: stateDir, Defaults: []string{"search_aliases.json"},
		What: "search aliases file", Env: "MCP_BRIDGE_SEARCH_ALIASES", Limit: maxAliasFileBytes, Parse: parseAliases,
		OnLoad: func(path string, m map[string]map[string]string, err error) {
			switch {
			case err != nil:
				log.Warn("search aliases cannot be used: searching without them", "file", path, "err", err)
			case m != nil:
				log.Info("search aliases loaded", "file", path, "servers", len(m))
			}
		},
	})
}

// parseAliases parses an aliases file's JSON (see aliasFile).
func parseAliases(data []byte, _ string) (map[string]map[string]string, error) {
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
