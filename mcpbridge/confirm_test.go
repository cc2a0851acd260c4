package mcpbridge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
