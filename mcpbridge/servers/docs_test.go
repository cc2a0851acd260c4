package servers

import (
	"strings"
	"testing"
)

func TestSignatureAndSummary(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"owner": map[string]any{"type": "string"}, "title": map[string]any{"type": "string"},
		"body": map[string]any{"type": "string"}, "labels": map[string]any{"type": "array"}, "per-page": map[string]any{"type": "integer"},
	}, "required": []any{"owner", "title"}}
	got := signature("github", "create_issue", schema)
	if !strings.HasPrefix(got, "mcp_github.create_issue(*, ") || !strings.Contains(got, "owner: str") || !strings.Contains(got, "title: str") ||
		!strings.Contains(got, "body: str = None") || !strings.Contains(got, "labels: list = None") || !strings.HasSuffix(got, ", **arguments)") {
		t.Errorf("signature: %s", got)
	}
	if i, j := strings.Index(got, "owner: str,"), strings.Index(got, "body: str = None"); i < 0 || j < i {
		t.Errorf("required parameters not first: %s", got)
	}
	if got := signature("s", "ping", map[string]any{"type": "object"}); got != "mcp_s.ping()" {
		t.Errorf("no parameters: %s", got)
	}
	if got := signature("s", "odd", "not a schema"); got != "mcp_s.odd(**arguments)" {
		t.Errorf("unusable schema: %s", got)
	}
	for desc, want := range map[string]string{
		"Create a new issue. Then more.":         "Create a new issue.",
		"  List files\nin a directory":           "List files",
		"No full stop":                           "No full stop",
		"":                                       "",
		strings.Repeat("word ", 100):             strings.TrimSpace(strings.Repeat("word ", 40)) + "…",
		"v1.2 is the version. And then":          "v1.2 is the version.",
		strings.Repeat("é", 150) + ". The rest.": strings.Repeat("é", 100) + "…",
	} {
		if got := summaryOf(desc); got != want {
			t.Errorf("summaryOf(%.30q) = %q, want %q", desc, got, want)
		}
	}
}
