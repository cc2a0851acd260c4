package discovery

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func names(servers []Server) []string {
	var n []string
	for _, s := range servers {
		n = append(n, s.Name)
	}
	return n
}

func TestDiscoveryLocationsAndPriority(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	extra := filepath.Join(t.TempDir(), "extra.json")
	opts := Options{Home: home, Cwd: cwd, ServersConfig: extra}
	r := NewRegistry(opts)

	write(t, filepath.Join(home, "MCPs", "fs.json"), `{"mcpServers": {"filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp", 7], "env": {"A": "1", "N": 2}, "cwd": "/srv", "description": "files"}}}`)
	write(t, filepath.Join(home, "MCPs", "notes.txt"), `ignored`)
	write(t, filepath.Join(home, ".config", "mcp", "servers", "x.toml"), "[mcpServers.memory]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-memory\"]\n[mcpServers.filesystem]\ncommand = \"shadowed\"\n")
	write(t, filepath.Join(cwd, "mcp-servers", "broken.json"), `{"mcpServers": {`)
	write(t, filepath.Join(cwd, ".vscode", "mcp.json"), `{"servers": {"vscode-one": {"type": "stdio", "command": "node", "args": ["one.js"]}, "remote": {"url": "https://example.invalid/mcp"}}}`)
	write(t, filepath.Join(home, ".claude.json"), `{"mcpServers": {"claude-global": {"command": "g"}}, "projects": {"`+cwd+`": {"mcpServers": {"claude-project": {"command": "p"}}}, "/elsewhere": {"mcpServers": {"other-project": {"command": "o"}}}}}`)
	write(t, filepath.Join(home, ".cursor", "mcp.json"), `{"mcpServers": {"cursor-one": {"command": "c"}, "bad-args": {"command": "c", "args": "nope"}}}`)
	write(t, filepath.Join(home, ".config", "Code", "User", "settings.json"), "{\n  // user settings\n  \"mcp\": {\"servers\": {\"code-settings\": {\"command\": \"s\" /* inline */}}},\n  \"url\": \"http://a//b\"\n}")
	write(t, filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json"), `{"mcpServers": {"mac-desktop": {"command": "m"}}}`)
	write(t, extra, `{"mcpServers": {"from-env": {"command": "e"}, "cursor-one": {"command": "shadowed"}}}`)
	write(t, filepath.Join(home, ".codeium", "windsurf", "mcp_config.json"), `{"mcpServers": {"self": {"command": "uvx", "args": ["--from", "git+https://x/mcp-server-code-execution-mode", "mcp-server-code-execution-mode", "run"]}}}`)

	got := r.Servers()
	want := []string{"filesystem", "memory", "vscode-one", "claude-project", "claude-global", "cursor-one", "code-settings", "mac-desktop", "from-env"}
	if !slices.Equal(names(got), want) {
		t.Fatalf("servers %v, want %v", names(got), want)
	}
	fs := got[0]
	if fs.Command != "npx" || !slices.Equal(fs.Args, []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp", "7"}) ||
		fs.Env["A"] != "1" || fs.Env["N"] != "2" || fs.Cwd != "/srv" || fs.Description != "files" || filepath.Base(fs.Source) != "fs.json" {
		t.Fatalf("filesystem entry: %+v", fs)
	}
	if sc, _ := r.Lookup("cursor-one"); sc.Command != "c" {
		t.Fatalf("first definition must win: %+v", sc)
	}

	if _, ok := r.Lookup("self"); ok {
		t.Fatal("self entry allowed without AllowSelf")
	}
	opts.AllowSelf = true
	if _, ok := NewRegistry(opts).Lookup("self"); !ok {
		t.Fatal("self entry not allowed with MCP_BRIDGE_ALLOW_SELF_SERVER=1")
	}
}

func TestDiscoveryStateDirAndReload(t *testing.T) {
	home, state := t.TempDir(), t.TempDir()
	r := NewRegistry(Options{Home: home, Cwd: t.TempDir(), StateDir: state})
	clock := time.Now()
	r.now = func() time.Time { return clock }
	path := filepath.Join(state, "a.json")
	write(t, path, `{"mcpServers": {"one": {"command": "a"}}}`)
	// As the newest original, ~/MCPs is read too, after the state directory.
	write(t, filepath.Join(home, "MCPs", "also.json"), `{"mcpServers": {"also-read": {"command": "a"}, "one": {"command": "b"}}}`)
	// The bridge's own files there are not server configurations.
	write(t, filepath.Join(state, "policy.json"), `{"servers": {"everything": {"deny": ["get-env"]}}}`)
	write(t, filepath.Join(home, "MCPs", "search_keywords.json"), `{"servers": {"kw": {"command": "x"}}}`)
	if got := names(r.Servers()); !slices.Equal(got, []string{"one", "also-read"}) {
		t.Fatalf("servers %v", got)
	}
	// The cache serves unchanged files; a change is seen by the first
	// lookup after Recheck, not before: one look answers for Recheck.
	write(t, path, `{"mcpServers": {"one": {"command": "a"}, "two": {"command": "b"}}}`)
	future := time.Now().Add(2 * time.Second)
	os.Chtimes(path, future, future)
	clock = clock.Add(DefaultRecheck - time.Millisecond)
	if got := names(r.Servers()); !slices.Equal(got, []string{"one", "also-read"}) {
		t.Fatalf("within Recheck of the last look: %v", got)
	}
	clock = clock.Add(time.Millisecond)
	if got := names(r.Servers()); !slices.Equal(got, []string{"one", "two", "also-read"}) {
		t.Fatalf("after the change: %v", got)
	}
	os.Remove(path)
	clock = clock.Add(time.Hour)
	if got := names(r.Servers()); !slices.Equal(got, []string{"also-read", "one"}) {
		t.Fatalf("after removal: %v", got)
	}
}

func TestStripJSONComments(t *testing.T) {
	in := `{"a": "x // not a comment", /* c */ "b": 1 // end
}`
	got := string(stripJSONComments([]byte(in)))
	// Every byte keeps its offset: a comment becomes spaces.
	want := "{\"a\": \"x // not a comment\", " + strings.Repeat(" ", len("/* c */")) + " \"b\": 1 " +
		strings.Repeat(" ", len("// end")) + "\n}"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestConfigJSONVariants reads VS Code's JSON (comments, trailing commas,
// a byte order mark) and refuses what follows a document.
func TestConfigJSONVariants(t *testing.T) {
	r := NewRegistry(Options{Home: "/home/nobody", Cwd: "/work"})
	for i, want := range map[int][]string{1: {"memory"}, 2: {"time"}, 3: {"p", "g"}, 4: {"Stub Two", "docs"}} {
		s := configSeeds[i]
		path := "/x/mcp.json"
		if s.toml {
			path = "/x/servers.toml"
		}
		got, err := r.parseConfig([]byte(s.data), path, true)
		if err != nil || !slices.Equal(names(got), want) {
			t.Fatalf("seed %d: %v, %v; want %v", i, names(got), err, want)
		}
	}
	for _, bad := range []string{`{"mcpServers": {"a": {"command": "a"}}} trailing`, `{"mcpServers": {}} {}`, `{"a": 1/**/2}`} {
		if got, err := r.parseConfig([]byte(bad), "/x/mcp.json", false); err == nil {
			t.Fatalf("%q accepted: %v", bad, names(got))
		}
	}
}

// Compatibility with the original bridge: the places it reads server
// configurations from, and the fields it reads there.

// TestOriginalConfigLocations writes one server into each place the
// original bridge reads (its newest version: ~/MCPs/*.json; its older
// ones: the Claude files of the home and the project, and the server
// directories) and finds them all, with a state directory elsewhere.
func TestOriginalConfigLocations(t *testing.T) {
	home, cwd, state := t.TempDir(), t.TempDir(), t.TempDir()
	appSupport := filepath.Join(home, "Library", "Application Support")
	locations := []string{
		filepath.Join(home, "MCPs", "a.json"),
		filepath.Join(home, ".claude.json"),
		filepath.Join(appSupport, "Claude Code", "claude_code_config.json"),
		filepath.Join(appSupport, "Claude", "claude_code_config.json"),
		filepath.Join(appSupport, "Claude", "claude_desktop_config.json"),
		filepath.Join(cwd, "claude_code_config.json"),
		filepath.Join(cwd, "claude_desktop_config.json"),
		filepath.Join(home, ".config", "mcp", "servers", "b.json"),
		filepath.Join(appSupport, "Claude Code", "mcp", "servers", "c.json"),
		filepath.Join(appSupport, "Claude", "mcp", "servers", "d.json"),
		filepath.Join(cwd, "mcp-servers", "e.json"),
		filepath.Join(cwd, "servers-from-env.json"),
	}
	var want []string
	for i, path := range locations {
		name := fmt.Sprintf("s%02d", i)
		write(t, path, `{"mcpServers": {"`+name+`": {"command": "srv"}}}`)
		want = append(want, name)
	}
	r := NewRegistry(Options{Home: home, Cwd: cwd, StateDir: state, ServersConfig: locations[len(locations)-1]})
	got := names(r.Servers())
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("servers %v; want one from each of the original's locations %v", got, want)
	}
	for _, sc := range r.Servers() {
		if i := slices.Index(want, sc.Name); sc.Source != locations[i] {
			t.Errorf("%s from %s; want %s", sc.Name, sc.Source, locations[i])
		}
	}
}

// TestOriginalFileDescription checks that a file's own description is
// the description of its servers that have none, as in the original.
func TestOriginalFileDescription(t *testing.T) {
	home := t.TempDir()
	write(t, filepath.Join(home, "MCPs", "tools.json"), `{"description": "the team's tools", "mcpServers": {
		"plain": {"command": "a"},
		"own": {"command": "b", "description": "its own"}
	}}`)
	r := NewRegistry(Options{Home: home, Cwd: t.TempDir()})
	for name, want := range map[string]string{"plain": "the team's tools", "own": "its own"} {
		if sc, ok := r.Lookup(name); !ok || sc.Description != want {
			t.Errorf("%s: description %q (found %v); want %q", name, sc.Description, ok, want)
		}
	}
}

// TestUserConfigLocations reads the user files of VS Code (mcp.json,
// before settings.json) and Claude Desktop on Linux, which `setup`
// writes, and skips an entry that starts this binary by its resolved
// path.
func TestUserConfigLocations(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	appSupport := filepath.Join(home, "Library", "Application Support")
	write(t, filepath.Join(home, ".config", "Code", "User", "mcp.json"), `{"servers": {"vs": {"type": "stdio", "command": "a"}, "dup": {"command": "first"}}}`)
	write(t, filepath.Join(home, ".config", "Code", "User", "settings.json"), `{"mcp": {"servers": {"dup": {"command": "second"}}}}`)
	write(t, filepath.Join(home, ".config", "Claude", "claude_desktop_config.json"), `{"mcpServers": {"desktop": {"command": "b"}}}`)
	write(t, filepath.Join(appSupport, "Code", "User", "mcp.json"), `{"servers": {"mac-vs": {"command": "c"}}}`)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(self)
	write(t, filepath.Join(home, ".cursor", "mcp.json"), `{"mcpServers": {"me": {"command": "`+real+`", "args": ["run"]}}}`)
	r := NewRegistry(Options{Home: home, Cwd: cwd})
	if got, want := names(r.Servers()), []string{"dup", "vs", "desktop", "mac-vs"}; !slices.Equal(got, want) {
		t.Fatalf("servers %v, want %v", got, want)
	}
	if sc, _ := r.Lookup("dup"); sc.Command != "first" {
		t.Errorf("mcp.json must win over settings.json: %+v", sc)
	}
}
