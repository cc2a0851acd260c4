package approval

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// TestShowArguments: shares (short values leave room to long ones),
// lengths stated, redaction at any depth, escapes, and the bound on
// keys.
func TestShowArguments(t *testing.T) {
	redacts := (*policy.Policy)(nil).Redacts
	args := map[string]any{
		"body":  strings.Repeat("é", 3000),
		"n":     float64(3),
		"deep":  map[string]any{"api_token": "sk-1", "list": []any{true, nil, "\x00\u2066"}},
		"emoji": "\U000E0041 tag",
	}
	shown, err := showArguments(args, redacts)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(shown, "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], `  "body" = "éé`) || !strings.HasSuffix(lines[0], "(cut: 6002 bytes in all)") {
		t.Fatalf("shown:\n%s", shown)
	}
	for _, want := range []string{`  "deep" = {"api_token":"[redacted]","list":[true,null,"\u0000\u2066"]}`,
		`  "emoji" = "\udb40\udc41 tag"`, `  "n" = 3`} {
		if !strings.Contains(shown, want+"\n") && !strings.HasSuffix(shown, want) {
			t.Errorf("shown lacks %s:\n%s", want, shown)
		}
	}
	if n := len(lines[0]); n < maxShownArgs-200 || n > maxShownArgs+100 {
		t.Errorf("the long value's line is %d bytes, want about its share of %d", n, maxShownArgs)
	}
	var whole strings.Builder
	n, err := WriteArguments(&whole, args, redacts)
	if err != nil || n != int64(whole.Len()) || n != argumentsLength(args, redacts) {
		t.Fatalf("WriteArguments: %d %v, %d written, length %d", n, err, whole.Len(), argumentsLength(args, redacts))
	}
	var back any
	if err := json.Unmarshal([]byte(whole.String()), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, audit.Redact(args, redacts)) {
		t.Errorf("whole arguments: %s", whole.String())
	}
	many := map[string]any{}
	for i := range maxShownKeys + 1 {
		many[fmt.Sprint("k", i)] = i
	}
	if _, err := showArguments(many, redacts); err == nil {
		t.Errorf("%d keys shown", len(many))
	}
	if s, _ := showArguments(map[string]any{}, redacts); s != "  (none)" {
		t.Errorf("no arguments: %q", s)
	}
	if got := escapeFormat("a\u202eb\u200bc\U000E0001"); got != `a\u202eb\u200bc\udb40\udc01` {
		t.Errorf("escapeFormat: %q", got)
	}
}
