package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// maxConfigBytes bounds one configuration file.
const maxConfigBytes = 8 << 20

// parseFile reads the servers defined in the file at path, telling bad of
// each malformed entry it skips.
func (r *Registry) parseFile(path string, size int64, project bool, bad func(server string, err error)) ([]Server, error) {
	if size > maxConfigBytes {
		return nil, fmt.Errorf("%d bytes is over the %d-byte limit", size, maxConfigBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return r.decodeConfig(data, path, project, bad)
}

// parseConfig reads the servers defined in data, the content of the
// configuration file at path: TOML for a .toml file, else JSON with
// comments and trailing commas (VS Code's settings and mcp.json) and an
// optional byte order mark. project adds the servers of the entry of the
// current directory under "projects" (~/.claude.json), first. Malformed
// entries are logged and skipped; a syntax error says its line and column.
func (r *Registry) parseConfig(data []byte, path string, project bool) ([]Server, error) {
	return r.decodeConfig(data, path, project, r.logEntry(path))
}

// decodeConfig is parseConfig telling bad of each malformed entry it
// skips.
func (r *Registry) decodeConfig(data []byte, path string, project bool, bad func(server string, err error)) ([]Server, error) {
	var doc map[string]any
	if filepath.Ext(path) == ".toml" {
		if _, err := toml.Decode(string(data), &doc); err != nil {
			return nil, tomlSyntaxError(err)
		}
	} else {
		// Both passes keep every byte's offset, so that an error's
		// position is the file's.
		body := bytes.TrimPrefix(data, utf8BOM)
		plain := stripTrailingCommas(stripJSONComments(body))
		dec := json.NewDecoder(bytes.NewReader(plain))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return nil, jsonSyntaxError(data, len(data)-len(body), plain, err)
		}
		end := dec.InputOffset()
		if _, err := dec.Token(); err != io.EOF {
			at := int(end) + len(plain[end:]) - len(bytes.TrimLeft(plain[end:], " \t\r\n"))
			next, _ := utf8.DecodeRune(plain[at:])
			return nil, newSyntaxError("JSON", data, len(data)-len(body)+at, fmt.Errorf("%q after the end of the document", next))
		}
	}
	servers := r.serversOf(doc, path, bad)
	if project {
		if projects, ok := doc["projects"].(map[string]any); ok {
			if p, ok := projects[r.opts.Cwd].(map[string]any); ok {
				servers = append(r.serversOf(p, path, bad), servers...)
			}
		}
	}
	return servers, nil
}

// serversOf reads the server tables of one document: mcpServers (most
// agents), servers (VS Code), mcp.servers (VS Code settings), mcp_servers
// (TOML configs), telling bad of each malformed entry it skips.
func (r *Registry) serversOf(doc map[string]any, path string, bad func(server string, err error)) []Server {
	var tables []map[string]any
	for _, key := range []string{"mcpServers", "servers", "mcp_servers"} {
		if t, ok := doc[key].(map[string]any); ok {
			tables = append(tables, t)
		}
	}
	if m, ok := doc["mcp"].(map[string]any); ok {
		if t, ok := m["servers"].(map[string]any); ok {
			tables = append(tables, t)
		}
	}
	// A file's own description describes its servers that have none, as
	// in the original.
	fileDesc, _ := doc["description"].(string)
	var out []Server
	for _, t := range tables {
		names := make([]string, 0, len(t))
		for name := range t {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			sc, err := parseEntry(name, t[name])
			if err != nil {
				bad(name, err)
				continue
			}
			sc.Source = path
			if sc.Description == "" {
				sc.Description = fileDesc
			}
			out = append(out, sc)
		}
	}
	return out
}

// errRemoteServer reports an entry of a remote server, which the bridge
// does not proxy by design.
var errRemoteServer = errors.New("remote (url) servers are not proxied; only stdio servers with a command")

// parseEntry validates one server definition.
func parseEntry(name string, raw any) (Server, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return Server{}, fmt.Errorf("not an object")
	}
	if strings.TrimSpace(name) == "" {
		return Server{}, fmt.Errorf("empty server name")
	}
	sc := Server{Name: name}
	cmd, ok := m["command"].(string)
	if !ok || strings.TrimSpace(cmd) == "" {
		if _, hasURL := m["url"]; hasURL {
			return Server{}, errRemoteServer
		}
		return Server{}, fmt.Errorf("no command")
	}
	sc.Command = cmd
	if a, ok := m["args"]; ok {
		list, ok := a.([]any)
		if !ok {
			return Server{}, fmt.Errorf("args is not a list")
		}
		for _, v := range list {
			sc.Args = append(sc.Args, scalarString(v))
		}
	}
	if e, ok := m["env"]; ok {
		env, ok := e.(map[string]any)
		if !ok {
			return Server{}, fmt.Errorf("env is not an object")
		}
		sc.Env = map[string]string{}
		for k, v := range env {
			sc.Env[k] = scalarString(v)
		}
	}
	if c, ok := m["cwd"].(string); ok {
		sc.Cwd = c
	}
	if d, ok := m["description"].(string); ok {
		sc.Description = d
	}
	if v, ok := m["shared"]; ok {
		shared, ok := v.(bool)
		if !ok {
			return Server{}, fmt.Errorf("shared is not true or false")
		}
		sc.Shared = shared
	}
	return sc, nil
}

func scalarString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}
