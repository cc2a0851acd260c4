package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// A setupClient is an MCP client that setup configures: where its
// configuration file is, the member of the file that holds its servers,
// and the shape of an entry.
type setupClient struct {
	// name is the client's name on the command line; title, the name
	// shown.
	name, title string
	// table is the member of the file that holds the servers:
	// "mcpServers", or "servers" (VS Code's mcp.json).
	table string
	// typed entries say "type": "stdio".
	typed bool
	// cli is the client's own command, used instead of editing the file
	// when it is on PATH ("": none): a running Claude Code rewrites its
	// ~/.claude.json and would undo an edit made behind its back.
	cli string
	// file returns the configuration file of a user whose home is home,
	// on goos; getenv reads APPDATA on Windows.
	file func(home, goos string, getenv func(string) string) string
}

// setupClients are the clients setup configures, as the command line
// names them.
var setupClients = []setupClient{
	{name: "claude-code", title: "Claude Code", table: "mcpServers", typed: true, cli: "claude",
		file: func(home, _ string, _ func(string) string) string { return filepath.Join(home, ".claude.json") }},
	{name: "claude-desktop", title: "Claude Desktop", table: "mcpServers",
		file: func(home, goos string, getenv func(string) string) string {
			return filepath.Join(userConfigDir(home, goos, getenv), "Claude", "claude_desktop_config.json")
		}},
	{name: "cursor", title: "Cursor", table: "mcpServers",
		file: func(home, _ string, _ func(string) string) string { return filepath.Join(home, ".cursor", "mcp.json") }},
	{name: "vscode", title: "VS Code", table: "servers", typed: true,
		file: func(home, goos string, getenv func(string) string) string {
			return filepath.Join(userConfigDir(home, goos, getenv), "Code", "User", "mcp.json")
		}},
}

// findSetupClient returns the client called name.
func findSetupClient(name string) (*setupClient, bool) {
	i := slices.IndexFunc(setupClients, func(c setupClient) bool { return c.name == name })
	if i < 0 {
		return nil, false
	}
	return &setupClients[i], true
}

// setupClientNames lists the clients' names for messages.
func setupClientNames() string {
	var names []string
	for _, c := range setupClients {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

// userConfigDir is where desktop applications keep their settings, as
// Electron's appData (Claude Desktop's, VS Code's): ~/Library/Application
// Support on macOS, %APPDATA% on Windows, ~/.config elsewhere (the
// directory discovery reads, whatever XDG_CONFIG_HOME says).
func userConfigDir(home, goos string, getenv func(string) string) string {
	switch goos {
	case "darwin":
		return filepath.Join(home, "Library", "Application Support")
	case "windows":
		if d := getenv("APPDATA"); d != "" {
			return d
		}
		return filepath.Join(home, "AppData", "Roaming")
	}
	return filepath.Join(home, ".config")
}

// A stdioEntry is a client's entry of a server it starts: Type is
// "stdio" for the clients that ask for it (Claude Code, VS Code), left
// out for the others.
type stdioEntry struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// entry returns c's entry that starts the bridge at exe with env.
func (c *setupClient) entry(exe string, env map[string]string) json.RawMessage {
	e := stdioEntry{Command: exe, Args: []string{"run"}, Env: env}
	if e.Env == nil {
		e.Env = map[string]string{}
	}
	if c.typed {
		e.Type = "stdio"
	}
	return marshalJSON(e)
}

// sameJSON reports whether a and b are the same JSON value, whatever
// their spacing and the order of their members.
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// describeEntry says in one line what a server entry starts.
func describeEntry(raw json.RawMessage) string {
	var e struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
		URL     string   `json:"url"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return string(raw)
	}
	if e.Command == "" {
		return e.URL
	}
	return strings.Join(append([]string{e.Command}, e.Args...), " ")
}

// lookPathIn finds the executable file called name in the directories of
// pathList (PATH's value), as exec.LookPath does in the process's PATH.
// Empty and relative directories are skipped.
func lookPathIn(name, pathList string) (string, bool) {
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// A clientCLI is a client's own command, which setup runs to change the
// client's configuration (claude mcp add-json, claude mcp remove).
type clientCLI struct {
	// path is the command's file; home, the HOME it runs with.
	path, home string
}

// run runs the command with args and returns its output; a failure
// carries the output.
func (c *clientCLI) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.path, args...)
	cmd.Env = append(os.Environ(), "HOME="+c.home)
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("running %s: %w: %s", c.commandLine(args...), err, bytes.TrimSpace(out))
	}
	return out, nil
}

// commandLine shows the command with args as a shell would take it.
func (c *clientCLI) commandLine(args ...string) string {
	words := []string{shellQuote(filepath.Base(c.path))}
	for _, a := range args {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// addArgs are the arguments of `claude mcp add-json` adding entry as name
// in the user scope.
func addArgs(name string, entry json.RawMessage) []string {
	return []string{"mcp", "add-json", "--scope", "user", name, string(entry)}
}

// removeArgs are the arguments of `claude mcp remove` removing name from
// the user scope.
func removeArgs(name string) []string {
	return []string{"mcp", "remove", "--scope", "user", name}
}
