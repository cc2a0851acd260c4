// Package discovery finds the MCP servers configured for the bridge: it
// reads the configuration files of the agents and of the bridge itself
// (JSON with comments and trailing commas, or TOML), first definition of a
// name winning, and reports what is wrong with them.
package discovery

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// ImplementationName is the bridge's MCP implementation name, as the
// original's: announced to clients and to proxied servers, and the name
// by which discovery knows an entry that would start the bridge itself.
const ImplementationName = "mcp-server-code-execution-mode"

// A Server is one MCP server the bridge can start and proxy.
type Server struct {
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

// Options say where a Registry looks. Zero values come from the
// process: its home and working directories.
type Options struct {
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
	// Recheck is how long one look at the configuration files answers
	// for: a lookup within it of the last look reuses what that look
	// found instead of stating every location again (about twenty
	// system calls, once per proxied call otherwise). Zero:
	// DefaultRecheck; negative: every lookup looks.
	Recheck time.Duration
}

// DefaultRecheck is Options.Recheck's default: a changed file is seen
// within half a second.
const DefaultRecheck = 500 * time.Millisecond

// stateDir is StateDir resolved against the home directory.
func (o Options) stateDir() string {
	state := o.StateDir
	switch {
	case state == "":
		return filepath.Join(o.Home, "MCPs")
	case strings.HasPrefix(state, "~/"):
		return filepath.Join(o.Home, state[2:])
	}
	return state
}

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
// ./.vscode/mcp.json, the agents' own config files (VS Code's user
// mcp.json and settings.json, Claude Desktop's), their macOS equivalents,
// then MCP_SERVERS_CONFIG.
func (o Options) sources() []source {
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
		// VS Code's user mcp.json (where `setup vscode` writes, and VS
		// Code's own "MCP: Add Server" in user scope) before its
		// settings.json; Claude Desktop's Linux file.
		{pattern: filepath.Join(home, ".config", "Code", "User", "mcp.json")},
		{pattern: filepath.Join(home, ".config", "Code", "User", "settings.json")},
		{pattern: filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")},
		{pattern: filepath.Join(appSupport, "Claude Code", "claude_code_config.json")},
		{pattern: filepath.Join(appSupport, "Claude", "claude_code_config.json")},
		{pattern: filepath.Join(appSupport, "Claude", "claude_desktop_config.json")},
		{pattern: filepath.Join(appSupport, "Code", "User", "mcp.json")},
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
	opts Options
	log  *slog.Logger
	// self is this executable, and selfReal the same with symlinks
	// resolved, to skip entries that would start it.
	self, selfReal string
	mu             sync.Mutex
	files          map[string]cachedFile
	// last is what the last look found, and when it looked (zero: no
	// look yet, or it was forgotten).
	last   []Server
	lastAt time.Time
	now    func() time.Time // time.Now; tests move it
}

// A cachedFile is what a Registry keeps of one configuration file: the
// servers it defines, and its size and time when they were read.
type cachedFile struct {
	size    int64
	mtime   time.Time
	servers []Server
}

// NewRegistry returns a Registry; nothing is read until a server is
// looked up.
func NewRegistry(opts Options) *Registry {
	if opts.Home == "" {
		opts.Home, _ = os.UserHomeDir()
	}
	if opts.Cwd == "" {
		opts.Cwd, _ = os.Getwd()
	}
	if opts.Recheck == 0 {
		opts.Recheck = DefaultRecheck
	}
	r := &Registry{opts: opts, log: opts.Logger, files: map[string]cachedFile{}, now: time.Now}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.self, _ = os.Executable()
	if r.self != "" {
		r.selfReal, _ = filepath.EvalSymlinks(r.self)
	}
	return r
}

// StateDir returns the state directory: Options.StateDir resolved against
// the home directory.
func (r *Registry) StateDir() string { return r.opts.stateDir() }

func (r *Registry) expand(src source) []string {
	if !src.glob {
		return []string{src.pattern}
	}
	matches, _ := filepath.Glob(src.pattern)
	var files []string
	for _, m := range matches {
		if operatorFiles[filepath.Base(m)] {
			continue
		}
		if ext := filepath.Ext(m); ext == ".json" || ext == ".toml" {
			files = append(files, m)
		}
	}
	slices.Sort(files)
	return files
}

// operatorFiles are the bridge's own files of the state directory (the
// tool policy, the search keywords), which share it with server
// configurations and are never read as one: a policy's "servers"
// section would otherwise be taken for VS Code's.
var operatorFiles = map[string]bool{"policy.json": true, "policy.toml": true,
	"search_keywords.json": true, "search_aliases.json": true}

// logEntry returns the function that logs a malformed entry of the file at
// path, which discovery skips.
func (r *Registry) logEntry(path string) func(server string, err error) {
	return func(server string, err error) {
		r.log.Warn("skipping an MCP server entry", "server", server, "source", path, "err", err)
	}
}

// isSelf reports whether sc would start this bridge.
func (r *Registry) isSelf(sc Server) bool {
	if r.self != "" && (sc.Command == r.self || sc.Command == r.selfReal) {
		return true
	}
	for _, s := range append([]string{sc.Command}, sc.Args...) {
		if strings.Contains(s, ImplementationName) {
			return true
		}
	}
	return false
}
