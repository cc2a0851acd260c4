package mcpbridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// maxConfigBytes bounds one configuration file.
const maxConfigBytes = 8 << 20

// A serverConfig is one MCP server the bridge can start and proxy.
type serverConfig struct {
	Name        string            `json:"name"`
	Command     string            `json:"command"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Cwd         string            `json:"cwd,omitempty"`
	Description string            `json:"description,omitempty"`
	// Shared asks for one instance of the server for every client
	// session of the bridge, instead of one per session.
	Shared bool `json:"shared,omitempty"`
	// Source is the file the definition came from.
	Source string `json:"source"`
}

// DiscoveryOptions say where a Registry looks. Zero values come from the
// process: its home and working directories.
type DiscoveryOptions struct {
	// Home is the user's home directory. Zero: os.UserHomeDir.
	Home string
	// Cwd is the project directory. Zero: the working directory.
	Cwd string
	// StateDir holds server configs, memories and saved tools; "~/" is
	// the home directory (MCP_BRIDGE_STATE_DIR). Zero: ~/MCPs.
	StateDir string
	// ServersConfig is one more configuration file, read last
	// (MCP_SERVERS_CONFIG). Zero: none.
	ServersConfig string
	// AllowSelf keeps entries that would start this bridge itself
	// (MCP_BRIDGE_ALLOW_SELF_SERVER). Zero: they are skipped.
	AllowSelf bool
	// Logger receives skipped files and entries. Zero: discarded.
	Logger *slog.Logger
}

// stateDir is StateDir resolved against the home directory.
func (o DiscoveryOptions) stateDir() string {
	state := o.StateDir
	switch {
	case state == "":
		return filepath.Join(o.Home, "MCPs")
	case strings.HasPrefix(state, "~/"):
		return filepath.Join(o.Home, state[2:])
	}
	return state
}

// stateDir returns the state directory.
func (r *Registry) stateDir() string { return r.opts.stateDir() }

// A source is one place definitions are read from, in priority order.
type source struct {
	// glob or path; a glob lists the files of a directory.
	pattern string
	glob    bool
	// project, for ~/.claude.json, also reads projects[Cwd].
	project bool
}

// sources returns the places to look, first definition winning: the state
// directory (~/MCPs), ~/MCPs when the state directory is elsewhere,
// ~/.config/mcp/servers, ./mcp-servers, Claude's macOS server directories,
// ./claude_code_config.json, ./claude_desktop_config.json,
// ./.vscode/mcp.json, the agents' own config files, their macOS
// equivalents, then MCP_SERVERS_CONFIG.
func (o DiscoveryOptions) sources() []source {
	home, cwd := o.Home, o.Cwd
	state := o.stateDir()
	appSupport := filepath.Join(home, "Library", "Application Support")
	s := []source{
		{pattern: filepath.Join(state, "*"), glob: true},
		{pattern: filepath.Join(home, ".config", "mcp", "servers", "*"), glob: true},
		{pattern: filepath.Join(cwd, "mcp-servers", "*"), glob: true},
		// The original's other locations: its macOS server directories
		// and the project's Claude files.
		{pattern: filepath.Join(appSupport, "Claude Code", "mcp", "servers", "*"), glob: true},
		{pattern: filepath.Join(appSupport, "Claude", "mcp", "servers", "*"), glob: true},
		{pattern: filepath.Join(cwd, "claude_code_config.json")},
		{pattern: filepath.Join(cwd, "claude_desktop_config.json")},
		{pattern: filepath.Join(cwd, ".vscode", "mcp.json")},
		{pattern: filepath.Join(home, ".claude.json"), project: true},
		{pattern: filepath.Join(home, ".cursor", "mcp.json")},
		{pattern: filepath.Join(home, ".opencode.json")},
		{pattern: filepath.Join(home, ".codeium", "windsurf", "mcp_config.json")},
		{pattern: filepath.Join(home, ".config", "Code", "User", "settings.json")},
		{pattern: filepath.Join(appSupport, "Claude Code", "claude_code_config.json")},
		{pattern: filepath.Join(appSupport, "Claude", "claude_code_config.json")},
		{pattern: filepath.Join(appSupport, "Claude", "claude_desktop_config.json")},
		{pattern: filepath.Join(appSupport, "Code", "User", "settings.json")},
	}
	if mcps := filepath.Join(home, "MCPs"); filepath.Clean(state) != mcps {
		// The newest original reads ~/MCPs whatever its state directory.
		s = slices.Insert(s, 1, source{pattern: filepath.Join(mcps, "*"), glob: true})
	}
	if o.ServersConfig != "" {
		s = append(s, source{pattern: o.ServersConfig})
	}
	return s
}

// A Registry holds the discovered servers and re-reads a configuration
// file only when its size or modification time changed.
type Registry struct {
	opts  DiscoveryOptions
	log   *slog.Logger
	self  string // this executable, to skip entries that would start it
	mu    sync.Mutex
	files map[string]cachedFile
}

// A cachedFile is what a Registry keeps of one configuration file: the
// servers it defines, and its size and time when they were read.
type cachedFile struct {
	size    int64
	mtime   time.Time
	servers []serverConfig
}

// NewRegistry returns a Registry; nothing is read until a server is
// looked up.
func NewRegistry(opts DiscoveryOptions) *Registry {
	if opts.Home == "" {
		opts.Home, _ = os.UserHomeDir()
	}
	if opts.Cwd == "" {
		opts.Cwd, _ = os.Getwd()
	}
	r := &Registry{opts: opts, log: opts.Logger, files: map[string]cachedFile{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.self, _ = os.Executable()
	return r
}

// servers returns every discovered server, first definition of a name
// winning, in discovery order.
func (r *Registry) servers() []serverConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	allowSelf := r.opts.AllowSelf
	seen := map[string]bool{}
	var out []serverConfig
	for _, src := range r.opts.sources() {
		for _, path := range r.expand(src) {
			for _, sc := range r.read(path, src.project) {
				if seen[sc.Name] {
					continue
				}
				if !allowSelf && r.isSelf(sc) {
					r.log.Info("skipping an MCP server entry that would start this bridge", "server", sc.Name, "source", path,
						"hint", "MCP_BRIDGE_ALLOW_SELF_SERVER=1 allows it")
					continue
				}
				seen[sc.Name] = true
				out = append(out, sc)
			}
		}
	}
	return out
}

// lookup returns the server called name.
func (r *Registry) lookup(name string) (serverConfig, bool) {
	for _, sc := range r.servers() {
		if sc.Name == name {
			return sc, true
		}
	}
	return serverConfig{}, false
}

func (r *Registry) expand(src source) []string {
	if !src.glob {
		return []string{src.pattern}
	}
	matches, _ := filepath.Glob(src.pattern)
	var files []string
	for _, m := range matches {
		if ext := filepath.Ext(m); ext == ".json" || ext == ".toml" {
			files = append(files, m)
		}
	}
	slices.Sort(files)
	return files
}

// read returns the servers defined in path, from the cache when the file
// did not change. Missing files give nothing; malformed ones are logged.
func (r *Registry) read(path string, project bool) []serverConfig {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		delete(r.files, path)
		return nil
	}
	if c, ok := r.files[path]; ok && c.size == fi.Size() && c.mtime.Equal(fi.ModTime()) {
		return c.servers
	}
	servers, err := r.parseFile(path, fi.Size(), project, r.logEntry(path))
	if err != nil {
		r.log.Warn("skipping an MCP configuration file", "path", path, "err", err)
	}
	r.files[path] = cachedFile{size: fi.Size(), mtime: fi.ModTime(), servers: servers}
	return servers
}

// logEntry returns the function that logs a malformed entry of the file at
// path, which discovery skips.
func (r *Registry) logEntry(path string) func(server string, err error) {
	return func(server string, err error) {
		r.log.Warn("skipping an MCP server entry", "server", server, "source", path, "err", err)
	}
}

// parseFile reads the servers defined in the file at path, telling bad of
// each malformed entry it skips.
func (r *Registry) parseFile(path string, size int64, project bool, bad func(server string, err error)) ([]serverConfig, error) {
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
func (r *Registry) parseConfig(data []byte, path string, project bool) ([]serverConfig, error) {
	return r.decodeConfig(data, path, project, r.logEntry(path))
}

// decodeConfig is parseConfig telling bad of each malformed entry it
// skips.
func (r *Registry) decodeConfig(data []byte, path string, project bool, bad func(server string, err error)) ([]serverConfig, error) {
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
func (r *Registry) serversOf(doc map[string]any, path string, bad func(server string, err error)) []serverConfig {
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
	var out []serverConfig
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
func parseEntry(name string, raw any) (serverConfig, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return serverConfig{}, fmt.Errorf("not an object")
	}
	if strings.TrimSpace(name) == "" {
		return serverConfig{}, fmt.Errorf("empty server name")
	}
	sc := serverConfig{Name: name}
	cmd, ok := m["command"].(string)
	if !ok || strings.TrimSpace(cmd) == "" {
		if _, hasURL := m["url"]; hasURL {
			return serverConfig{}, errRemoteServer
		}
		return serverConfig{}, fmt.Errorf("no command")
	}
	sc.Command = cmd
	if a, ok := m["args"]; ok {
		list, ok := a.([]any)
		if !ok {
			return serverConfig{}, fmt.Errorf("args is not a list")
		}
		for _, v := range list {
			sc.Args = append(sc.Args, scalarString(v))
		}
	}
	if e, ok := m["env"]; ok {
		env, ok := e.(map[string]any)
		if !ok {
			return serverConfig{}, fmt.Errorf("env is not an object")
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
			return serverConfig{}, fmt.Errorf("shared is not true or false")
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

// isSelf reports whether sc would start this bridge.
func (r *Registry) isSelf(sc serverConfig) bool {
	if r.self != "" && sc.Command == r.self {
		return true
	}
	for _, s := range append([]string{sc.Command}, sc.Args...) {
		if strings.Contains(s, implementationName) {
			return true
		}
	}
	return false
}

// utf8BOM is the byte order mark some Windows editors put first.
var utf8BOM = []byte("\xef\xbb\xbf")

// stripJSONComments replaces // and /* */ comments outside strings with
// whitespace, as VS Code's settings allow them: every byte of a comment
// becomes a space, but its newlines stay, so that "1/**/2" stays two
// tokens and every byte keeps its offset (an error's line and column are
// the file's). An unterminated block comment runs to the end.
func stripJSONComments(b []byte) []byte {
	out := make([]byte, 0, len(b))
	var str jsonStrings
	blank := func(c byte) byte {
		if c == '\n' {
			return c
		}
		return ' '
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if str.step(c) {
			out = append(out, c)
			continue
		}
		switch {
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				out = append(out, ' ')
				i++
			}
			if i < len(b) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				end = len(b)
			} else {
				end += i + 4
			}
			for ; i < end; i++ {
				out = append(out, blank(b[i]))
			}
			i--
		default:
			out = append(out, c)
		}
	}
	return out
}

// stripTrailingCommas replaces by a space a comma outside strings that
// follows a value and that only whitespace separates from the "}" or "]"
// after it, as VS Code's settings allow. It runs after
// stripJSONComments; valid JSON never changes, and every byte keeps its
// offset.
func stripTrailingCommas(b []byte) []byte {
	out := make([]byte, 0, len(b))
	var str jsonStrings
	var last byte // the last byte out that is not whitespace
	for i, c := range b {
		inStr := str.step(c)
		if !inStr && c == ',' && last != '{' && last != '[' && last != ',' {
			rest := bytes.TrimLeft(b[i+1:], " \t\r\n")
			if len(rest) > 0 && (rest[0] == '}' || rest[0] == ']') {
				out = append(out, ' ')
				continue
			}
		}
		out = append(out, c)
		if inStr || !isJSONSpace(c) {
			last = c
		}
	}
	return out
}

// A jsonStrings follows a byte-by-byte scan of JSON to tell the bytes of
// string literals from the rest.
type jsonStrings struct{ in, esc bool }

// step advances over c and reports whether c belongs to a string literal,
// its quotes included.
func (s *jsonStrings) step(c byte) bool {
	switch {
	case s.esc:
		s.esc = false
	case s.in && c == '\\':
		s.esc = true
	case c == '"':
		s.in = !s.in
		return true
	}
	return s.in
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
