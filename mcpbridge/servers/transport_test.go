package servers

import (
	"bufio"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// TestMessageLinesDropsGarbage reads a server's stdout with garbage around
// the real messages: only the JSON-RPC 2.0 messages come through, whole
// and in order.
func TestMessageLinesDropsGarbage(t *testing.T) {
	messages := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`,
		`{"jsonrpc": "2.0", "method": "notifications/message", "params": {"text": "a\nb"}}`,
		`[{"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":3,"result":{}}]`,
	}
	garbage := []string{
		"Server starting...", "", "   \t", "\xff\xfe\x80", "{not json", `{"jsonrpc": "2.0", "id": `,
		`{"hello":"world"}`, `{"jsonrpc":"1.0","id":1}`, `{"jsonrpc":2}`, "[1, 2, 3]", "[]", `[{"jsonrpc":"2.0"},{}]`,
		"null", "42", `"text"`, "{} trailing", `{"jsonrpc":"2.0"}{"jsonrpc":"2.0"}`,
	}
	var out strings.Builder
	for i, m := range messages {
		for _, g := range garbage[i*5 : min(len(garbage), i*5+8)] {
			out.WriteString(g + "\n")
		}
		out.WriteString("  " + m + "\r\n")
	}
	out.WriteString(strings.Join(garbage, "\n"))
	m := &messageLines{src: bufio.NewReaderSize(strings.NewReader(out.String()), 16), log: slog.New(slog.DiscardHandler)}
	got, err := io.ReadAll(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(messages, "\n") + "\n"; string(got) != want {
		t.Errorf("passed on:\n%s\nwant:\n%s", got, want)
	}
}

// TestMessageLinesLimit reports a line over the limit as an error.
func TestMessageLinesLimit(t *testing.T) {
	huge := strings.NewReader(strings.Repeat("x", maxServerLine+1) + "\n")
	m := &messageLines{src: bufio.NewReaderSize(huge, 64<<10), log: slog.New(slog.DiscardHandler)}
	if _, err := io.ReadAll(m); err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("a line over the limit: %v", err)
	}
}
