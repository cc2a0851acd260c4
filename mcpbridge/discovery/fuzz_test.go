package discovery

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// configSeeds are configuration files as the agents write them, and
// broken ones; toml says which are TOML.
var configSeeds = []struct {
	data string
	toml bool
}{
	// Claude Desktop (claude_desktop_config.json).
	{data: `{
  "mcpServers": {
    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]},
    "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "env": {"DEBUG": "1", "PORT": 8080}},
    "github": {"command": "docker", "args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "<token>"}}
  }
}`},
	// VS Code .vscode/mcp.json: servers, comments, trailing commas, inputs, a remote server.
	{data: `{
  // workspace servers
  "inputs": [{"type": "promptString", "id": "token", "description": "Token", "password": true}],
  "servers": {
    "memory": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory",],},
    /* a remote one: not proxied */
    "remote": {"type": "http", "url": "https://api.example.com/mcp"},
  },
}`},
	// VS Code user settings.json: mcp.servers among other settings.
	{data: "\ufeff{\n  \"editor.fontSize\": 14,\n  \"mcp\": {\"servers\": {\"time\": {\"command\": \"uvx\", \"args\": [\"mcp-server-time\"], \"cwd\": \"${workspaceFolder}\"}}},\n  \"url\": \"http://a//b\" // trailing\n}"},
	// ~/.claude.json: global and per-project servers.
	{data: `{"numStartups": 3, "mcpServers": {"g": {"command": "g", "description": "global"}}, "projects": {"/work": {"mcpServers": {"p": {"command": "p", "args": []}}}, "/elsewhere": {"mcpServers": {"o": {"command": "o"}}}}}`},
	// TOML (~/MCPs/*.toml, Codex's config.toml).
	{data: "[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"mcp-server-docs\", 3, 1.5, true]\nenv = { \"API_KEY\" = \"x\", N = 2 }\n\n[mcpServers.\"Stub Two\"]\ncommand = \"stub\"\ndescription = \"\"\"multi\nline\"\"\"\n", toml: true},
	{data: "model = \"o3\"\n[mcp_servers.fetch]\ncommand = \"uvx\"\nargs = [\"mcp-server-fetch\"]\nstartup_timeout_ms = 20_000\nwhen = 1979-05-27T07:32:00Z\n", toml: true},
	// Broken entries next to good ones.
	{data: `{"mcpServers": {"ok": {"command": "x"}, "": {"command": "y"}, " ": {"command": "z"}, "blank": {"command": "  "}, "num": {"command": 3}, "badargs": {"command": "c", "args": "nope"}, "badenv": {"command": "c", "env": []}, "str": "npx", "null": null}}`},
	{data: `{"mcpServers": {"a": {"command": "a"}}} {"mcpServers": {"b": {"command": "b"}}}`},
	{data: `{"mcpServers": {"a": {"command": "a"}}} trailing`},
	{data: `{"mcpServers": {"a": {"command": "a"}}`}, {data: `[]`}, {data: `null`}, {data: ``}, {data: `{"mcpServers": [1]}`},
	{data: `{"a": 1/**/2}`}, {data: `{"mcpServers": {,}}`}, {data: `[,]`},
	{data: "[mcp_servers.x]\ncommand = 3\n[mcp_servers.x.env]\n", toml: true}, {data: "[[mcp_servers]]\ncommand = \"x\"\n", toml: true},
	{data: "mcp_servers = 1\n[mcp_servers]\n", toml: true}, {data: "\xff", toml: true},
}

// FuzzConfigFile feeds arbitrary JSON and TOML files to discovery: it
// never panics and is deterministic; every server it returns has a name
// and a command that are not blank and is the entry of that name in one
// of the server tables of the document, as an independent decoder reads
// it; a JSON file accepted is valid JSON once its comments and trailing
// commas are gone.
func FuzzConfigFile(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s.data), s.toml)
	}
	r := NewRegistry(Options{Home: "/home/nobody", Cwd: "/work"})
	f.Fuzz(func(t *testing.T, data []byte, isTOML bool) {
		path := "/home/nobody/.claude.json"
		if isTOML {
			path = "/home/nobody/MCPs/servers.toml"
		}
		servers, err := r.parseConfig(data, path, true)
		again, err2 := r.parseConfig(data, path, true)
		if (err == nil) != (err2 == nil) || !reflect.DeepEqual(servers, again) {
			t.Fatalf("not deterministic: %v, %v then %v, %v", servers, err, again, err2)
		}
		if err != nil {
			if servers != nil {
				t.Fatalf("servers with an error: %v", servers)
			}
			return
		}
		var doc map[string]any
		if isTOML {
			if _, err := toml.Decode(string(data), &doc); err != nil {
				t.Fatalf("accepted TOML that does not decode: %v", err)
			}
		} else {
			plain := stripTrailingCommas(stripJSONComments(bytes.TrimPrefix(data, utf8BOM)))
			if !json.Valid(plain) {
				t.Fatalf("accepted %q, which is not JSON once comments and trailing commas are gone: %q", data, plain)
			}
			dec := json.NewDecoder(bytes.NewReader(plain))
			dec.UseNumber()
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("accepted JSON that does not decode into an object: %v", err)
			}
		}
		tables := serverTables(doc)
		if p, ok := doc["projects"].(map[string]any); ok {
			if p, ok := p["/work"].(map[string]any); ok {
				tables = append(tables, serverTables(p)...)
			}
		}
		// A file's own description describes its servers that have none,
		// as in the original.
		fileDesc, _ := doc["description"].(string)
		for _, s := range servers {
			if strings.TrimSpace(s.Name) == "" || strings.TrimSpace(s.Command) == "" || s.Source != path {
				t.Fatalf("a half-valid server: %+v", s)
			}
			if !fromSomeTable(s, tables, fileDesc) {
				t.Fatalf("server %+v is no entry of the document's tables", s)
			}
		}
	})
}

// serverTables returns the server tables of a document, as the README
// lists them.
func serverTables(doc map[string]any) []map[string]any {
	var out []map[string]any
	for _, k := range []string{"mcpServers", "servers", "mcp_servers"} {
		if t, ok := doc[k].(map[string]any); ok {
			out = append(out, t)
		}
	}
	if m, ok := doc["mcp"].(map[string]any); ok {
		if t, ok := m["servers"].(map[string]any); ok {
			out = append(out, t)
		}
	}
	return out
}

// fromSomeTable reports whether one of tables has an entry named s.Name
// with s's command, cwd, description (or none, and s has the file's
// fileDesc), number of args and env variables.
func fromSomeTable(s Server, tables []map[string]any, fileDesc string) bool {
	for _, t := range tables {
		e, ok := t[s.Name].(map[string]any)
		if !ok || e["command"] != s.Command {
			continue
		}
		args, _ := e["args"].([]any)
		env, _ := e["env"].(map[string]any)
		cwd, _ := e["cwd"].(string)
		desc, _ := e["description"].(string)
		if len(args) == len(s.Args) && len(env) == len(s.Env) && cwd == s.Cwd &&
			(desc == s.Description || desc == "" && s.Description == fileDesc) {
			return true
		}
	}
	return false
}

// FuzzStripJSONComments checks the two passes that turn VS Code's JSON
// into JSON: valid JSON never changes; every byte keeps its offset and
// every newline its place; a comment is whitespace, so a comment put
// where a space may go, in a document without strings, leaves the
// document as valid or invalid as the space, and with the same value; and
// both passes are idempotent.
func FuzzStripJSONComments(f *testing.F) {
	for _, seed := range []struct {
		data    string
		at      int
		comment string
		line    bool
	}{
		{`{"a":"// x","b":"/* y */","c":[1,2]}`, 1, " c ", false},
		{`"\"//\""`, 0, "x", true},
		{`{"u":"\u002f/"}`, 0, "", false},
		{`[]`, 1, "*", false},
		{`12`, 1, "", false},
		{`[1,2]`, 3, " trailing ", true},
		{`{"a": [1, 2,], }`, 5, "/", false},
		{`[true,null]`, 5, "", true},
		{"/*/", 0, "", false},
		{`"unterminated \"`, 3, "", false},
	} {
		f.Add([]byte(seed.data), seed.at, seed.comment, seed.line)
	}
	f.Fuzz(func(t *testing.T, data []byte, at int, comment string, line bool) {
		stripped := stripJSONComments(data)
		if again := stripJSONComments(stripped); !bytes.Equal(again, stripped) {
			t.Fatalf("stripping %q twice: %q then %q", data, stripped, again)
		}
		noCommas := stripTrailingCommas(stripped)
		if again := stripTrailingCommas(noCommas); !bytes.Equal(again, noCommas) {
			t.Fatalf("dropping the trailing commas of %q twice: %q then %q", stripped, noCommas, again)
		}
		// Every byte keeps its offset and every newline its place, so an
		// error's line and column are the file's.
		for i := range data {
			if len(stripped) != len(data) || len(noCommas) != len(data) || (data[i] == '\n') != (noCommas[i] == '\n') {
				t.Fatalf("%q became %q: offsets or lines moved", data, noCommas)
			}
		}
		if json.Valid(data) {
			if !bytes.Equal(stripped, data) || !bytes.Equal(noCommas, data) {
				t.Fatalf("valid JSON %q changed: %q, %q", data, stripped, noCommas)
			}
		}
		if at < 0 || at > len(data) || bytes.ContainsAny(data, `"/`) {
			return
		}
		var with, space []byte
		if line {
			if strings.Contains(comment, "\n") {
				return
			}
			with = concat(data[:at], []byte("//"+comment+"\n"), data[at:])
			space = concat(data[:at], []byte("\n"), data[at:])
		} else {
			if strings.Contains(comment, "*/") {
				return
			}
			with = concat(data[:at], []byte("/*"+comment+"*/"), data[at:])
			space = concat(data[:at], []byte(" "), data[at:])
		}
		got := stripJSONComments(with)
		var a, b any
		errA, errB := json.Unmarshal(got, &a), json.Unmarshal(space, &b)
		if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
			t.Fatalf("%q gave %q (%v, %v); with a space for the comment %q (%v, %v)", with, got, a, errA, space, b, errB)
		}
	})
}

func concat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}
