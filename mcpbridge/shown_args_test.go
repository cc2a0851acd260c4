package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// hiddenArgsCode calls get-sum with a long early argument, then path and
// repo, and a title whose bidi override and zero-width space would make
// "exe.txt" read as "txt.exe".
const hiddenArgsCode = `from mcp import runtime
try:
    await runtime.call_tool('stub', 'get-sum', {'a': 'x' * 10000, 'path': '/etc/shadow', 'repo': 'evil/repo', 'title': 'report\u202etxt.exe\u200b'})
except MCPError as e:
    print('MCPError', e)`

// hasFormatChar reports whether s holds a character of category Cf.
func hasFormatChar(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Cf, r) })
}

// TestQuestionShowsEveryArgument: a question shows every top-level key
// whatever comes before it, a cut value with its whole length, format
// characters escaped, and the code's line as the sandbox's claim. On
// bb2658b the arguments were cut at 2 KiB of sorted, indented JSON: path
// and repo were out of view, and the bidi override was sent raw.
func TestQuestionShowsEveryArgument(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	cs, _ := policyBridge(t, `{"servers": {"stub": {"confirm": ["get-sum"]}}}`, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		asked = append(asked, req.Params.Message)
		mu.Unlock()
		return &mcp.ElicitResult{Action: "decline"}, nil
	})
	_, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "code": hiddenArgsCode})
	if !strings.Contains(text, "declined by the user") {
		t.Fatalf("the call: %q", text)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 {
		t.Fatalf("asked %d times", len(asked))
	}
	msg := asked[0]
	for _, want := range []string{`"path" = "/etc/shadow"`, `"repo" = "evil/repo"`, `"title" = "report\u202etxt.exe\u200b"`,
		"(cut: 10002 bytes in all)", "line 3 of its code (its claim, not checked)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the question lacks %s:\n%s", want, msg)
		}
	}
	if hasFormatChar(msg) {
		t.Errorf("the question holds a format character raw: %q", msg)
	}
	if len(msg) > 4<<10 {
		t.Errorf("the question is %d bytes", len(msg))
	}
}

// TestConsoleShowsArgumentsWhole: on the console a question lists every
// key with no format character raw, and its whole arguments are served
// as JSON (the bidi override escaped, decoding to the very arguments).
// On bb2658b the console had the same 2 KiB cut and no whole view.
func TestConsoleShowsArgumentsWhole(t *testing.T) {
	cs, br, srv, _ := consoleBridge(t, `{"servers": {"stub": {"confirm": ["get-sum"], "confirm_via": ["console"]}}}`, nil)
	done := make(chan string, 1)
	go func() {
		_, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "code": hiddenArgsCode})
		done <- text
	}()
	waitFor(t, "the question", func() bool { return len(br.approvals.Load().List()) == 1 })
	q := br.approvals.Load().List()[0]
	for _, want := range []string{"/etc/shadow", "evil/repo"} {
		if !strings.Contains(q.Arguments, want) || !strings.Contains(q.Message, want) {
			t.Errorf("the question lacks %s: %+v", want, q)
		}
	}
	if hasFormatChar(q.Message) || hasFormatChar(q.Arguments) {
		t.Errorf("a format character raw on the console: %+v", q)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/console/arguments?question="+q.ID, nil)
	req.Header.Set("Authorization", "Bearer "+testConsoleToken)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || hasFormatChar(string(body)) || !strings.Contains(string(body), `\u202e`) {
		t.Fatalf("whole arguments: %d %.200q", resp.StatusCode, body)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("whole arguments are not JSON: %v", err)
	}
	want := map[string]any{"a": strings.Repeat("x", 10000), "path": "/etc/shadow", "repo": "evil/repo", "title": "report\u202etxt.exe\u200b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("whole arguments differ from the call's")
	}
	answerOnConsole(t, br, srv, "decline", "Ada")
	if text := <-done; !strings.Contains(text, "declined by the operator") {
		t.Fatalf("the call: %q", text)
	}
}

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
	n, err := writeArguments(&whole, args, redacts)
	if err != nil || n != int64(whole.Len()) || n != argumentsLength(args, redacts) {
		t.Fatalf("writeArguments: %d %v, %d written, length %d", n, err, whole.Len(), argumentsLength(args, redacts))
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
