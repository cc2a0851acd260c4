package audit

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

func TestArgumentsRedactedAndBounded(t *testing.T) {
	p := &policy.Policy{RedactKeys: []string{"session_*"}}
	args := map[string]any{"title": "x", "API_KEY": "k", "nested": map[string]any{"password": "p", "list": []any{map[string]any{"github_token": "t"}}}, "session_id": "s"}
	data, _ := json.Marshal(arguments(args, p.Redacts))
	got := string(data)
	for _, secret := range []string{`"k"`, `"p"`, `"t"`, `"s"`} {
		if strings.Contains(got, secret) {
			t.Errorf("%s shown in %s", secret, got)
		}
	}
	if !strings.Contains(got, `"title":"x"`) || strings.Count(got, "[redacted]") != 4 {
		t.Errorf("redacted: %s", got)
	}
	big := map[string]any{"data": strings.Repeat("y", 20000)}
	if m, ok := arguments(big, nil).(map[string]any); !ok || m["bytes"] == nil || len(m["truncated"].(string)) != maxArgs {
		t.Errorf("large arguments not truncated: %T", arguments(big, nil))
	}
}

func TestRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	a.RunPython(RunPython{Code: "print(1)", Began: began, Status: "ok", OutputBytes: 2, Session: "session-1", Issuer: "https://id.example.com", Subject: "alice"})
	a.ToolCall(ToolCall{Server: "s", Tool: "t", Arguments: map[string]any{"token": "x"}, Redacts: (*policy.Policy)(nil).Redacts,
		Began: began, Outcome: "denied", Err: errors.New("no"), Extra: []any{"rule", "r"}, MCPSession: "m"})
	a.Close()
	var nilLog *Log
	nilLog.RunPython(RunPython{})
	nilLog.ToolCall(ToolCall{})
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %s", len(lines), data)
	}
	var run, call map[string]any
	json.Unmarshal([]byte(lines[0]), &run)
	json.Unmarshal([]byte(lines[1]), &call)
	if run["event"] != "run_python" || run["code_bytes"] != 8.0 || len(run["code_sha256"].(string)) != 64 ||
		run["servers"] == nil || run["session"] != "session-1" || run["mcp_session"] != nil || run["issuer"] != "https://id.example.com" || run["subject"] != "alice" {
		t.Errorf("run_python record: %s", lines[0])
	}
	if call["event"] != "tool_call" || call["error"] != "no" || call["rule"] != "r" || call["session"] != nil || call["subject"] != nil ||
		call["mcp_session"] != "m" || !strings.Contains(lines[1], `"arguments":{"token":"[redacted]"}`) {
		t.Errorf("tool_call record: %s", lines[1])
	}
}

// TestRecordsEscapeFormatChars: a bidi override or a zero-width
// character in a record is written as its escape, and decodes back to
// itself.
func TestRecordsEscapeFormatChars(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.ToolCall(ToolCall{Server: "s", Tool: "t", Arguments: map[string]any{"name": "report\u202etxt.exe\u200b"}, Began: time.Now(), Outcome: "ok"})
	a.Close()
	data, _ := os.ReadFile(path)
	if strings.ContainsAny(string(data), "\u202e\u200b") || !strings.Contains(string(data), `report\u202etxt.exe\u200b`) {
		t.Fatalf("record %s", data)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil || rec["arguments"].(map[string]any)["name"] != "report\u202etxt.exe\u200b" {
		t.Fatalf("record decodes to %v (%v)", rec, err)
	}
}
