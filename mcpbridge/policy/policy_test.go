package policy

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParsePolicy(t *testing.T) {
	for _, tt := range []struct {
		name, data, wantErr string
	}{
		{"policy.json", `{}`, ""},
		{"policy.json", `{"servers": {"github": {"deny": ["delete_*"], "confirm": ["create_*"]}, "*": {"allow": ["*"]}}, "max_tool_calls": 5}`, ""},
		{"policy.toml", "max_tool_calls = 3\n[servers.github]\ndeny = [\"delete_*\"]\n", ""},
		{"policy.json", ``, "it is empty"},
		{"policy.json", " \n\t", "it is empty"},
		{"policy.json", `{"servers": {"github": {"dney": ["x"]}}}`, `unknown field "dney"`},
		{"policy.json", `{"sevrers": {}}`, `unknown field "sevrers"`},
		{"policy.json", "{\"servers\": {\"a\": {\"deny\": [\"\xff\"]}}}", "not valid UTF-8"},
		{"policy.json", "{\n  \"servers\": {,}\n}", "line 2, column"},
		{"policy.json", `{"servers": {"a": {"deny": ["[x"]}}}`, `servers["a"].deny: glob "[x": syntax error in pattern`},
		{"policy.json", `{"servers": {"[": {}}}`, `servers key: glob "["`},
		{"policy.json", `{"servers": {"a": {"allow": [""]}}}`, "want 1 to 256 bytes"},
		{"policy.json", `{"servers": {"a": null}}`, `servers["a"] is null`},
		{"policy.json", `{"max_tool_calls": -1}`, "max_tool_calls is -1"},
		{"policy.json", `{"confirm_without_elicitation": "maybe"}`, `confirm_without_elicitation is "maybe"`},
		{"policy.json", `{} {}`, "more than one JSON value"},
		{"policy.json", `[]`, "cannot unmarshal array"},
		{"policy.toml", "servers = 1\n", "cannot unmarshal number"},
		{"policy.json", `{"servers": {"a": {"deny": ["` + strings.Repeat("x", 257) + `"]}}}`, "want 1 to 256 bytes"},
		{"policy.json", `{"redact_keys": ["` + strings.Repeat(`x", "`, 1001) + `x"]}`, "at most 1000"},
		{"policy.json", strings.Repeat(" ", maxPolicyBytes) + "{}", "at most 1048576 are read"},
	} {
		_, err := parse([]byte(tt.data), tt.name)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("parse(%s, %.60q): %v, want %q", tt.name, tt.data, err, tt.wantErr)
		}
	}
}

func TestPolicyDecide(t *testing.T) {
	p, err := parse([]byte(`{"servers": {
		"github": {"deny": ["delete_*"], "confirm": ["create_*", "merge_*"]},
		"git*": {"allow": ["status"]},
		"scratch-*": {"load": false},
		"files": {"allow": ["read_*", "list_*"], "deny": ["read_secret*"]},
		"*": {"allow": ["*"]}
	}}`), "p.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		server, tool string
		kind         Kind
		rule         string
	}{
		{"github", "delete_repo", Deny, `servers["github"].deny "delete_*"`},
		{"github", "create_issue", Confirm, `servers["github"].confirm "create_*"`},
		{"github", "merge_pr", Confirm, `servers["github"].confirm "merge_*"`},
		{"github", "list_issues", Allow, ""},
		// The exact entry wins over the glob "git*", which wins over "*".
		{"gitlab", "status", Allow, ""},
		{"gitlab", "push", Deny, `servers["git*"].allow lists no glob it matches`},
		{"scratch-1", "anything", Deny, `servers["scratch-*"].load is false`},
		{"files", "read_file", Allow, ""},
		{"files", "read_secrets", Deny, `servers["files"].deny "read_secret*"`},
		{"files", "write_file", Deny, `servers["files"].allow lists no glob it matches`},
		{"other", "x", Allow, ""},
	} {
		v := p.Decide(tt.server, tt.tool)
		if v.Kind != tt.kind || v.Rule != tt.rule {
			t.Errorf("decide(%s, %s) = %+v, want %d %q", tt.server, tt.tool, v, tt.kind, tt.rule)
		}
	}
	if ok, _ := p.MayLoad("scratch-9"); ok {
		t.Error("scratch-9 may be loaded")
	}
	var none *Policy
	if v := none.Decide("a", "b"); v.Kind != Allow || none.CallLimit() != defaultMaxToolCalls || none.ConfirmUnasked() {
		t.Error("no policy is not allow-all with the default bound")
	}
	tools := []*mcp.Tool{{Name: "read_file"}, {Name: "read_secret"}, {Name: "write_file"}}
	if got := p.Visible("files", tools); len(got) != 1 || got[0].Name != "read_file" {
		t.Errorf("visible: %v", got)
	}
	// A pathological glob is matched in bounded time.
	hard := &Policy{Servers: map[string]*ServerRule{"s": {key: "s", Deny: []string{strings.Repeat("*a", 100) + "b"}}}}
	began := time.Now()
	hard.Decide("s", strings.Repeat("a", 4000))
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("a pathological glob took %v", took)
	}
}
func TestPolicyFileReloadsAndFailsClosed(t *testing.T) {
	dir := t.TempDir()
	f := Open("", dir, testLog(t))
	if p, err := f.Current(); p != nil || err != nil {
		t.Fatalf("no default file: %v %v", p, err)
	}
	path := filepath.Join(dir, "policy.json")
	write(t, path, `{"servers": {"a": {"deny": ["x"]}}}`)
	p, err := f.Current()
	if err != nil || p.Decide("a", "x").Kind != Deny {
		t.Fatalf("after writing: %v %v", p, err)
	}
	write(t, path, `{"servers": {"a": {"deny": [}}}`)
	if _, err := f.Current(); err == nil || !strings.Contains(err.Error(), "is invalid, so every proxied tool call is refused") {
		t.Fatalf("broken file: %v", err)
	}
	write(t, path, `{"servers": {"a": {"deny": ["y"]}}}`)
	if p, err := f.Current(); err != nil || p.Decide("a", "x").Kind != Allow {
		t.Fatalf("fixed file: %v %v", p, err)
	}
	explicit := Open(filepath.Join(dir, "missing.json"), dir, testLog(t))
	if _, err := explicit.Current(); err == nil || !strings.Contains(err.Error(), "does not exist (MCP_BRIDGE_POLICY names it)") {
		t.Fatalf("missing explicit file: %v", err)
	}
	adir := Open(dir, dir, testLog(t))
	if _, err := adir.Current(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a directory as the policy: %v", err)
	}
}

func testLog(t *testing.T) *slog.Logger { return slog.New(slog.DiscardHandler) }

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
