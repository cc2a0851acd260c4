package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// testExe is the bridge binary the tests' entries start.
const testExe = "/opt/bridge/bin/mcp-server-code-execution-mode"

// A setupEnv is a temporary user for setup: a home, an environment, and
// what the engine check answers.
type setupEnv struct {
	home     string
	env      map[string]string
	goos     string
	terminal bool
	stdin    string
	engine   checkResult
}

func newSetupEnv(t *testing.T) *setupEnv {
	t.Helper()
	return &setupEnv{home: t.TempDir(), env: map[string]string{"PATH": t.TempDir()}, goos: "linux",
		engine: checkResult{Check: "engine", Status: statusOK, Detail: "docker 20.10 (API 1.41) at unix:///var/run/docker.sock"}}
}

// run runs setup with args and returns its stdout, stderr and exit code.
func (e *setupEnv) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	opts := &setupOptions{Home: e.home, Cwd: e.home, GOOS: e.goos, Executable: testExe, Terminal: e.terminal,
		CheckEngine: func(context.Context, *config.Config, func(string) string) []checkResult {
			return []checkResult{e.engine}
		}}
	code := runSetup(context.Background(), args, strings.NewReader(e.stdin), &out, &errb, func(k string) string { return e.env[k] }, opts)
	return out.String(), errb.String(), code
}

// mustRun runs setup and fails the test unless it exits 0.
func (e *setupEnv) mustRun(t *testing.T, args ...string) (string, string) {
	t.Helper()
	out, errs, code := e.run(t, args...)
	if code != 0 {
		t.Fatalf("setup %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errs)
	}
	return out, errs
}

func writeFile(t *testing.T, path, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// decode reads the JSON file at path.
func decode(t *testing.T, path string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(readFile(t, path)), &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// serverTable returns the server table of the decoded file.
func serverTable(t *testing.T, doc map[string]any, table string) map[string]any {
	t.Helper()
	m, ok := doc[table].(map[string]any)
	if !ok {
		t.Fatalf("no %q in %v", table, doc)
	}
	return m
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestSetupMergesEachClient writes each client's file over one that has
// other settings, other servers and an old entry of the bridge: the
// other keys stay in their order, the other servers stay, the entry is
// replaced in the client's shape, the mode is kept and the old file is
// backed up, 0600.
func TestSetupMergesEachClient(t *testing.T) {
	for _, tt := range []struct {
		client, goos, file, table string
		typed                     bool
	}{
		{"claude-code", "linux", ".claude.json", "mcpServers", true},
		{"claude-desktop", "linux", ".config/Claude/claude_desktop_config.json", "mcpServers", false},
		{"claude-desktop", "darwin", "Library/Application Support/Claude/claude_desktop_config.json", "mcpServers", false},
		{"cursor", "linux", ".cursor/mcp.json", "mcpServers", false},
		{"vscode", "linux", ".config/Code/User/mcp.json", "servers", true},
		{"vscode", "darwin", "Library/Application Support/Code/User/mcp.json", "servers", true},
	} {
		t.Run(tt.client+"-"+tt.goos, func(t *testing.T) {
			e := newSetupEnv(t)
			e.goos = tt.goos
			path := filepath.Join(e.home, tt.file)
			before := `{"zeta": 1, "` + tt.table + `": {"other": {"command": "/usr/bin/other", "args": ["x"], "env": {"TOKEN": "s3cret"}},
				"code-execution": {"command": "/old/mcp-server-code-execution-mode", "args": ["run"]}}, "alpha": {"nested": [1, 2]}}`
			writeFile(t, path, before, 0o640)
			_, errs := e.mustRun(t, tt.client, "-keep-servers")
			if !strings.Contains(errs, "engine: the bridge will use docker 20.10") || !strings.Contains(errs, "replacing \"code-execution\"") {
				t.Errorf("stderr: %s", errs)
			}
			after := readFile(t, path)
			if i, j, k := strings.Index(after, `"zeta"`), strings.Index(after, `"`+tt.table+`"`), strings.Index(after, `"alpha"`); i < 0 || !(i < j && j < k) {
				t.Errorf("the members moved or went:\n%s", after)
			}
			doc := decode(t, path)
			if doc["zeta"] != 1.0 || doc["alpha"].(map[string]any)["nested"].([]any)[1] != 2.0 {
				t.Errorf("other settings changed: %v", doc)
			}
			srv := serverTable(t, doc, tt.table)
			other := srv["other"].(map[string]any)
			if other["command"] != "/usr/bin/other" || other["env"].(map[string]any)["TOKEN"] != "s3cret" {
				t.Errorf("the other server changed: %v", other)
			}
			want := map[string]any{"command": testExe, "args": []any{"run"}, "env": map[string]any{}}
			if tt.typed {
				want["type"] = "stdio"
			}
			if got, _ := json.Marshal(srv["code-execution"]); !sameJSON(got, marshalJSON(want)) {
				t.Errorf("entry %s, want %s", got, marshalJSON(want))
			}
			if m := mode(t, path); m != 0o640 {
				t.Errorf("mode %v, want the old file's 0640", m)
			}
			backup := path + backupSuffix
			if readFile(t, backup) != before || mode(t, backup) != 0o600 {
				t.Errorf("backup: mode %v, content %q", mode(t, backup), readFile(t, backup))
			}
		})
	}
}

// TestSetupNewFile makes the file and its directories, 0600, with no
// backup.
func TestSetupNewFile(t *testing.T) {
	e := newSetupEnv(t)
	_, errs := e.mustRun(t, "vscode")
	path := filepath.Join(e.home, ".config", "Code", "User", "mcp.json")
	if m := mode(t, path); m != 0o600 {
		t.Errorf("mode %v, want 0600", m)
	}
	if _, err := os.Stat(path + backupSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a backup of no file: %v", err)
	}
	if !strings.Contains(errs, "(a new file)") || !strings.Contains(errs, "VS Code has no other servers") {
		t.Errorf("stderr: %s", errs)
	}
	entry := serverTable(t, decode(t, path), "servers")["code-execution"].(map[string]any)
	if entry["type"] != "stdio" || entry["command"] != testExe {
		t.Errorf("entry %v", entry)
	}
}

// TestSetupBackupOnce keeps one backup, replaced by the next change,
// never a second file; a run that changes nothing writes nothing.
func TestSetupBackupOnce(t *testing.T) {
	e := newSetupEnv(t)
	path := filepath.Join(e.home, ".cursor", "mcp.json")
	writeFile(t, path, `{"mcpServers": {}}`, 0o600)
	e.mustRun(t, "cursor")
	first := readFile(t, path)
	e.mustRun(t, "cursor", "-runtime", "podman")
	second := readFile(t, path)
	if !strings.Contains(second, `"MCP_BRIDGE_RUNTIME": "podman"`) {
		t.Errorf("-runtime podman: %s", second)
	}
	backups, _ := filepath.Glob(filepath.Join(e.home, ".cursor", "*"))
	if len(backups) != 2 {
		t.Errorf("files %v, want the file and one backup", backups)
	}
	if readFile(t, path+backupSuffix) != first || mode(t, path+backupSuffix) != 0o600 {
		t.Errorf("the backup is not the file before the last change")
	}
	fi, _ := os.Stat(path)
	_, errs := e.mustRun(t, "cursor", "-runtime", "podman")
	if fi2, _ := os.Stat(path); !fi2.ModTime().Equal(fi.ModTime()) || readFile(t, path+backupSuffix) != first {
		t.Errorf("a run that changes nothing wrote")
	}
	if !strings.Contains(errs, "nothing else to change") {
		t.Errorf("stderr: %s", errs)
	}
}

// TestSetupRuntimeAndEngine writes no engine unless -runtime asks, and
// warns, with the fix, when no engine answers, writing all the same.
func TestSetupRuntimeAndEngine(t *testing.T) {
	e := newSetupEnv(t)
	e.engine = checkResult{Check: "engine", Status: statusFail, Detail: "no engine at unix:///nowhere", Hint: "start Docker or Podman"}
	_, errs := e.mustRun(t, "claude-desktop", "-env", "MCP_BRIDGE_IMAGE=img:1")
	if !strings.Contains(errs, "warning: no container engine answers: no engine at unix:///nowhere") || !strings.Contains(errs, "fix: start Docker or Podman") {
		t.Errorf("stderr: %s", errs)
	}
	path := filepath.Join(e.home, ".config", "Claude", "claude_desktop_config.json")
	env := serverTable(t, decode(t, path), "mcpServers")["code-execution"].(map[string]any)["env"].(map[string]any)
	if len(env) != 1 || env["MCP_BRIDGE_IMAGE"] != "img:1" {
		t.Errorf("env %v, want only the -env given", env)
	}
	if _, errs, code := e.run(t, "cursor", "-runtime", "lxc"); code != 2 || !strings.Contains(errs, "MCP_BRIDGE_RUNTIME") {
		t.Errorf("-runtime lxc: exit %d, %s", code, errs)
	}
	e.env["MCP_BRIDGE_IMAGE"] = "localhost/img"
	if _, errs := e.mustRun(t, "cursor", "-dry-run"); !strings.Contains(errs, "note: this shell sets MCP_BRIDGE_IMAGE") {
		t.Errorf("no note of the shell's setting: %s", errs)
	}
}

// TestSetupRemove removes the bridge's entry and nothing else.
func TestSetupRemove(t *testing.T) {
	e := newSetupEnv(t)
	path := filepath.Join(e.home, ".cursor", "mcp.json")
	writeFile(t, path, `{"mcpServers": {"a": {"command": "a"}, "mine": {"command": "x"}, "code-execution": {"command": "y"}}, "k": true}`, 0o600)
	e.mustRun(t, "cursor", "-remove", "-name", "mine")
	doc := decode(t, path)
	srv := serverTable(t, doc, "mcpServers")
	if _, ok := srv["mine"]; ok || len(srv) != 2 || srv["a"] == nil || srv["code-execution"] == nil || doc["k"] != true {
		t.Errorf("after -remove: %v", doc)
	}
	before := readFile(t, path)
	if _, errs := e.mustRun(t, "cursor", "-remove", "-name", "mine"); !strings.Contains(errs, "nothing to remove") || readFile(t, path) != before {
		t.Errorf("removing an absent entry: %s", errs)
	}
	if _, _, code := e.run(t, "cursor", "-remove", "-move-servers"); code != 2 {
		t.Errorf("-remove -move-servers: exit %d, want 2", code)
	}
}

// TestSetupRefusesUnparsable leaves a file that is not JSON as it is, and
// names it and where it fails; a file with comments is rewritten only
// with -force.
func TestSetupRefusesUnparsable(t *testing.T) {
	e := newSetupEnv(t)
	path := filepath.Join(e.home, ".cursor", "mcp.json")
	broken := "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"}\n    \"b\": {}\n  }\n}\n"
	writeFile(t, path, broken, 0o644)
	_, errs, code := e.run(t, "cursor")
	if code != 1 || !strings.Contains(errs, path+":4:5: not valid JSON") {
		t.Errorf("exit %d, stderr %s", code, errs)
	}
	if readFile(t, path) != broken {
		t.Error("the broken file changed")
	}
	if _, err := os.Stat(path + backupSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a backup of a refused file: %v", err)
	}
	if _, _, code := e.run(t, "cursor", "-remove"); code != 1 {
		t.Errorf("-remove on a broken file: exit %d", code)
	}
	writeFile(t, path, `[1, 2]`, 0o644)
	if _, errs, code := e.run(t, "cursor"); code != 1 || !strings.Contains(errs, "not an object") {
		t.Errorf("an array: exit %d, %s", code, errs)
	}

	commented := "{\n  // mine\n  \"servers\": {\"a\": {\"command\": \"a\"},},\n}\n"
	vsc := filepath.Join(e.home, ".config", "Code", "User", "mcp.json")
	writeFile(t, vsc, commented, 0o600)
	_, errs, code = e.run(t, "vscode")
	if code != 1 || !strings.Contains(errs, "not rewriting "+vsc) || !strings.Contains(errs, "comments or trailing commas") || !strings.Contains(errs, "-force") {
		t.Errorf("comments: exit %d, %s", code, errs)
	}
	if readFile(t, vsc) != commented {
		t.Error("the file with comments changed")
	}
	if out, _ := e.mustRun(t, "vscode", "-dry-run"); !strings.Contains(out, "without -force, setup would refuse") {
		t.Errorf("dry run of a file with comments: %s", out)
	}
	e.mustRun(t, "vscode", "-force")
	srv := serverTable(t, decode(t, vsc), "servers")
	if srv["a"] == nil || srv["code-execution"] == nil || readFile(t, vsc+backupSuffix) != commented {
		t.Errorf("-force: %v", srv)
	}
}

// TestSetupDryRun prints the entry and the file, and writes nothing.
func TestSetupDryRun(t *testing.T) {
	e := newSetupEnv(t)
	path := filepath.Join(e.home, ".cursor", "mcp.json")
	writeFile(t, path, `{"mcpServers": {"a": {"command": "/bin/a"}}}`, 0o644)
	list := func() []string {
		var files []string
		filepath.WalkDir(e.home, func(p string, d fs.DirEntry, err error) error {
			files = append(files, p)
			return nil
		})
		return files
	}
	before := list()
	out, errs := e.mustRun(t, "cursor", "-dry-run", "-move-servers")
	for _, want := range []string{"would add \"code-execution\" in " + path, `"command": "` + testExe + `"`,
		"would move a into " + filepath.Join(e.home, "MCPs", "servers.json")} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s\nstderr: %s", want, out, errs)
		}
	}
	if after := list(); !slices.Equal(before, after) || readFile(t, path) != `{"mcpServers": {"a": {"command": "/bin/a"}}}` {
		t.Errorf("a dry run wrote: %v → %v", before, after)
	}
	out, _ = e.mustRun(t, "cursor", "-dry-run", "-remove", "-name", "a")
	if !strings.Contains(out, `would remove "a" (/bin/a) from `+path) || readFile(t, path) != `{"mcpServers": {"a": {"command": "/bin/a"}}}` {
		t.Errorf("dry run of -remove: %s", out)
	}
}

// TestSetupMovesServers moves the servers the bridge proxies from the
// client's file into the bridge's own, merged with what it holds, and out
// of the client's; remote servers, other entries of the bridge and the
// client's other settings stay.
func TestSetupMovesServers(t *testing.T) {
	e := newSetupEnv(t)
	path := filepath.Join(e.home, ".cursor", "mcp.json")
	writeFile(t, path, `{"mcpServers": {
		"a": {"command": "/bin/a", "env": {"K": "v"}},
		"b": {"command": "/bin/b", "args": ["1"]},
		"c": {"command": "/bin/c"},
		"remote": {"url": "https://example.com/mcp"},
		"old-bridge": {"command": "uvx", "args": ["mcp-server-code-execution-mode", "run"]}
	}, "theme": "dark"}`, 0o644)
	bridgeFile := filepath.Join(e.home, "MCPs", "servers.json")
	writeFile(t, bridgeFile, `{"mcpServers": {"kept": {"command": "/bin/kept"}, "b": {"command": "/bin/old-b"}}}`, 0o644)
	_, errs := e.mustRun(t, "cursor", "-move-servers")
	// b stays: the bridge's own b, read first, wins over Cursor's.
	if !strings.Contains(errs, "Cursor's other servers, which the bridge proxies: a, c") ||
		!strings.Contains(errs, `note: "old-bridge" starts the bridge too`) ||
		!strings.Contains(errs, `Cursor's server "b" stays: the bridge does not take it from `+path+" (defined earlier in "+bridgeFile) ||
		!strings.Contains(errs, `Cursor's server "remote" stays`) {
		t.Errorf("stderr: %s", errs)
	}
	doc := decode(t, path)
	srv := serverTable(t, doc, "mcpServers")
	if srv["a"] != nil || srv["c"] != nil || srv["b"] == nil || srv["remote"] == nil || srv["old-bridge"] == nil || srv["code-execution"] == nil || doc["theme"] != "dark" {
		t.Errorf("the client's file: %v", doc)
	}
	moved := serverTable(t, decode(t, bridgeFile), "mcpServers")
	if moved["kept"] == nil || moved["a"].(map[string]any)["env"].(map[string]any)["K"] != "v" ||
		moved["b"].(map[string]any)["command"] != "/bin/old-b" || moved["c"] == nil || len(moved) != 4 {
		t.Errorf("the bridge's file: %v", moved)
	}
	if readFile(t, bridgeFile+backupSuffix) == "" || mode(t, bridgeFile) != 0o644 {
		t.Error("the bridge's file: no backup, or its mode changed")
	}
	// The bridge now finds them in its own file, and not itself.
	reg := discovery.NewRegistry(discovery.Options{Home: e.home, Cwd: t.TempDir()})
	var names []string
	for _, sc := range reg.Servers() {
		names = append(names, sc.Name+"@"+filepath.Base(sc.Source))
	}
	slices.Sort(names)
	if want := []string{"a@servers.json", "b@servers.json", "c@servers.json", "kept@servers.json"}; !slices.Equal(names, want) {
		t.Errorf("discovered %v, want %v", names, want)
	}

	// MCP_BRIDGE_STATE_DIR moves them there.
	e = newSetupEnv(t)
	state := t.TempDir()
	e.env[config.EnvStateDir] = state
	writeFile(t, filepath.Join(e.home, ".cursor", "mcp.json"), `{"mcpServers": {"a": {"command": "/bin/a"}}}`, 0o644)
	e.mustRun(t, "cursor", "-move-servers")
	if serverTable(t, decode(t, filepath.Join(state, "servers.json")), "mcpServers")["a"] == nil {
		t.Error("not moved into MCP_BRIDGE_STATE_DIR")
	}
}

// TestSetupAsksOnlyOnATerminal keeps the servers, with a hint, away from
// a terminal, and moves them when the user answers yes on one.
func TestSetupAsksOnlyOnATerminal(t *testing.T) {
	for _, tt := range []struct {
		terminal bool
		stdin    string
		moved    bool
		errs     string
	}{
		{false, "y\n", false, "hint: -move-servers moves them"},
		{true, "y\n", true, "[y/N]"},
		{true, "yes\n", true, "[y/N]"},
		{true, "\n", false, "[y/N]"},
		{true, "", false, "[y/N]"},
	} {
		e := newSetupEnv(t)
		e.terminal, e.stdin = tt.terminal, tt.stdin
		path := filepath.Join(e.home, ".cursor", "mcp.json")
		writeFile(t, path, `{"mcpServers": {"a": {"command": "/bin/a"}}}`, 0o644)
		_, errs := e.mustRun(t, "cursor")
		_, err := os.Stat(filepath.Join(e.home, "MCPs", "servers.json"))
		if moved := err == nil; moved != tt.moved || !strings.Contains(errs, tt.errs) {
			t.Errorf("terminal %v, answer %q: moved %v, stderr %s", tt.terminal, tt.stdin, moved, errs)
		}
		if !tt.moved && serverTable(t, decode(t, path), "mcpServers")["a"] == nil {
			t.Errorf("terminal %v, answer %q: a left the client's file", tt.terminal, tt.stdin)
		}
	}
	e := newSetupEnv(t)
	e.terminal, e.stdin = true, "y\n"
	writeFile(t, filepath.Join(e.home, ".cursor", "mcp.json"), `{"mcpServers": {"a": {"command": "/bin/a"}}}`, 0o644)
	if _, errs := e.mustRun(t, "cursor", "-keep-servers"); strings.Contains(errs, "[y/N]") {
		t.Errorf("-keep-servers asked: %s", errs)
	}
}

// fakeClaude puts a claude script on a new PATH of e that records each
// call's arguments, one a line, a line "---" after each call, and returns
// the record's path and the script's directory.
func fakeClaude(t *testing.T, e *setupEnv) (record, bin string) {
	t.Helper()
	bin = t.TempDir()
	record = filepath.Join(t.TempDir(), "argv")
	script := "#!/bin/sh\n{ for a in \"$@\"; do printf '%s\\n' \"$a\"; done; echo ---; } >>'" + record + "'\n"
	writeFile(t, filepath.Join(bin, "claude"), script, 0o755)
	e.env["PATH"] = "relative/dir:" + bin
	return record, bin
}

// calls reads the record of fakeClaude.
func calls(t *testing.T, record string) [][]string {
	t.Helper()
	data, err := os.ReadFile(record)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var out [][]string
	for _, call := range strings.Split(strings.TrimSuffix(string(data), "---\n"), "---\n") {
		out = append(out, strings.Split(strings.TrimSuffix(call, "\n"), "\n"))
	}
	return out
}

// TestSetupClaudeCLI changes Claude Code's configuration through claude
// when it is on PATH, and leaves ~/.claude.json to it.
func TestSetupClaudeCLI(t *testing.T) {
	e := newSetupEnv(t)
	record, bin := fakeClaude(t, e)
	path := filepath.Join(e.home, ".claude.json")
	before := `{"mcpServers": {"ev": {"type": "stdio", "command": "/bin/ev", "args": [], "env": {}},
		"code-execution": {"type": "stdio", "command": "/old/bridge", "args": ["run"], "env": {}}}, "numStartups": 3}`
	writeFile(t, path, before, 0o600)

	out, _ := e.mustRun(t, "claude-code", "-dry-run", "-move-servers")
	if calls(t, record) != nil || !strings.Contains(out, "would run: claude mcp remove --scope user ev") ||
		!strings.Contains(out, "would run: claude mcp add-json --scope user code-execution '{\"type\":\"stdio\",\"command\":\""+testExe+"\"") {
		t.Errorf("dry run: calls %v, stdout %s", calls(t, record), out)
	}

	e.mustRun(t, "claude-code", "-move-servers")
	entry := `{"type":"stdio","command":"` + testExe + `","args":["run"],"env":{}}`
	want := [][]string{
		{"mcp", "remove", "--scope", "user", "ev"},
		{"mcp", "remove", "--scope", "user", "code-execution"},
		{"mcp", "add-json", "--scope", "user", "code-execution", entry},
	}
	if got := calls(t, record); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("claude called with %q, want %q", got, want)
	}
	if readFile(t, path) != before {
		t.Error("setup edited ~/.claude.json behind claude's back")
	}
	if serverTable(t, decode(t, filepath.Join(e.home, "MCPs", "servers.json")), "mcpServers")["ev"] == nil {
		t.Error("ev not moved into the bridge's file")
	}

	os.Remove(record)
	e.mustRun(t, "claude-code", "-remove")
	if got := calls(t, record); !slices.EqualFunc(got, [][]string{{"mcp", "remove", "--scope", "user", "code-execution"}}, slices.Equal) {
		t.Errorf("-remove: claude called with %q", got)
	}

	// A claude that fails stops setup, with its output.
	writeFile(t, filepath.Join(bin, "claude"), "#!/bin/sh\necho 'MCP server code-execution already exists' >&2\nexit 1\n", 0o755)
	writeFile(t, path, `{"mcpServers": {}}`, 0o600)
	if _, errs, code := e.run(t, "claude-code"); code != 1 || !strings.Contains(errs, "already exists") {
		t.Errorf("a failing claude: exit %d, %s", code, errs)
	}
}

// TestSetupUsage prints the usage for -h and refuses bad command lines.
func TestSetupUsage(t *testing.T) {
	e := newSetupEnv(t)
	for _, tt := range []struct {
		args      []string
		code      int
		out, errs string
	}{
		{[]string{"-h"}, 0, "usage: mcp-server-code-execution-mode setup CLIENT", ""},
		{[]string{"cursor", "-h"}, 0, "-move-servers", ""},
		{nil, 2, "", "which client?"},
		{[]string{"emacs"}, 2, "", `unknown client "emacs": want one of claude-code, claude-desktop, cursor, vscode`},
		{[]string{"cursor", "vscode"}, 2, "", "one client at a time"},
		{[]string{"cursor", "-move-servers", "-keep-servers"}, 2, "", "choose one"},
		{[]string{"cursor", "-name", " "}, 2, "", "-name"},
		{[]string{"cursor", "-env", "NOEQUALS"}, 2, "", "want KEY=VALUE"},
		{[]string{"cursor", "-nope"}, 2, "", "flag provided but not defined: -nope"},
	} {
		out, errs, code := e.run(t, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errs, tt.errs) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", tt.args, code, out, errs)
		}
	}
	if out, _, code := runArgs(t, nil, "help"); code != 0 || !strings.Contains(out, "setup CLIENT") {
		t.Errorf("the command's usage lacks setup: %s", out)
	}
	if _, errs, code := runArgs(t, nil, "setup", "emacs"); code != 2 || !strings.Contains(errs, "unknown client") {
		t.Errorf("run does not dispatch setup: %d %s", code, errs)
	}
}

// TestSetupVSCodeDiscovered writes VS Code's user mcp.json, which
// discovery reads: the bridge finds the user's other VS Code servers
// there, and skips its own entry.
func TestSetupVSCodeDiscovered(t *testing.T) {
	e := newSetupEnv(t)
	path := filepath.Join(e.home, ".config", "Code", "User", "mcp.json")
	writeFile(t, path, `{"servers": {"gh": {"type": "stdio", "command": "/bin/gh-mcp"}}, "inputs": []}`, 0o600)
	_, errs := e.mustRun(t, "vscode")
	if !strings.Contains(errs, "VS Code's other servers, which the bridge proxies: gh") {
		t.Errorf("stderr: %s", errs)
	}
	reps := discovery.NewRegistry(discovery.Options{Home: e.home, Cwd: t.TempDir()}).Check()
	if len(reps) != 1 || reps[0].Path != path || !slices.Equal(reps[0].Servers, []string{"gh"}) ||
		len(reps[0].Entries) != 1 || reps[0].Entries[0].Server != "code-execution" || !reps[0].Entries[0].Benign {
		t.Errorf("discovery: %+v", reps)
	}
}
