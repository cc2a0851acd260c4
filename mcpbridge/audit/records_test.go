package audit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

func TestPolicyRedacts(t *testing.T) {
	p := &policy.Policy{RedactKeys: []string{"session_*"}}
	args := map[string]any{"title": "x", "API_KEY": "k", "nested": map[string]any{"password": "p", "list": []any{map[string]any{"github_token": "t"}}}, "session_id": "s"}
	data, _ := json.Marshal(Arguments(args, p.Redacts))
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
	if m, ok := Arguments(big, nil).(map[string]any); !ok || m["bytes"] == nil || len(m["truncated"].(string)) != maxArgs {
		t.Errorf("large arguments not truncated: %T", Arguments(big, nil))
	}
}
