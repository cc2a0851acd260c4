package mcpbridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
)

var pythonIdentifier = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// FuzzAliases checks that any names become distinct lowercase Python
// identifiers that are not keywords.
func FuzzAliases(f *testing.F) {
	for _, seed := range [][2]string{{"get-sum", "get_sum"}, {"class", "2fa"}, {"Ünïcode ☃", ""}, {"__", "a b"}, {"_2", "x"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		got := aliases([]string{a, b, a, b}, "tool")
		seen := map[string]bool{}
		for _, s := range got {
			if !pythonIdentifier.MatchString(s) || pythonKeywords[s] || seen[s] {
				t.Fatalf("aliases(%q, %q) = %q", a, b, got)
			}
			seen[s] = true
		}
		if again := aliases([]string{a, b, a, b}, "tool"); !reflect.DeepEqual(again, got) {
			t.Fatalf("not deterministic: %q then %q", got, again)
		}
	})
}

// FuzzConfigFile feeds arbitrary JSON and TOML config files to discovery:
// it never panics, and every server it returns has a name and a command.
func FuzzConfigFile(f *testing.F) {
	for _, seed := range []string{
		`{"mcpServers":{"fs":{"command":"npx","args":["-y","x"],"env":{"A":"1"},"cwd":"/tmp","description":"d"}}}`,
		`{"servers":{"gh":{"type":"stdio","command":"gh-mcp"}}} // comment`,
		`{"mcp":{"servers":{"a":{"command":"a"}}}, /* c */ "x": "// not a comment"}`,
		`{"projects":{"/work":{"mcpServers":{"p":{"command":"p"}}}},"mcpServers":{"q":{"command":""}}}`,
		"[mcp_servers.x]\ncommand = \"x\"\nargs = [\"1\"]\n",
		`{"mcpServers":{"n":{"command":3,"args":"no"}}}`, `[]`, `{`,
	} {
		f.Add([]byte(seed), seed[0] == '[' && len(seed) > 2)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, isTOML bool) {
		name := "c.json"
		if isTOML {
			name = "c.toml"
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r := NewRegistry(DiscoveryOptions{Home: dir, Cwd: "/work", Getenv: func(string) string { return "" }})
		servers, err := r.parseFile(path, int64(len(data)), true)
		if err != nil {
			return
		}
		for _, s := range servers {
			if s.Name == "" || s.Command == "" {
				t.Fatalf("a server without a name or command: %+v", s)
			}
		}
	})
}

// FuzzStripJSONComments checks that removing comments never changes what
// a valid JSON document means, strings with "//" and "/*" included.
func FuzzStripJSONComments(f *testing.F) {
	for _, seed := range []string{`{"a":"// x","b":"/* y */","c":[1,2]}`, `"\"//\""`, `{"u":"\u002f/"}`, `[]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			stripJSONComments(data) // must not panic either
			return
		}
		var before, after any
		json.Unmarshal(data, &before)
		stripped := stripJSONComments(data)
		if err := json.Unmarshal(stripped, &after); err != nil || !reflect.DeepEqual(before, after) {
			t.Fatalf("stripping %q gave %q (%v)", data, stripped, err)
		}
	})
}
