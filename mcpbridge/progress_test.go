package mcpbridge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/live"
)

// progressClient connects a client that records the progress
// notifications it receives.
func progressClient(t *testing.T) (*mcp.ClientSession, func() []*mcp.ProgressNotificationParams) {
	t.Helper()
	var got notes[*mcp.ProgressNotificationParams]
	cs := newFixture(t, fixtureOptions{Client: mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { got.add(req.Params) },
	}}).connectInMemory(t)
	return cs, got.all
}

// callWithToken calls run_python with code and a progress token.
func callWithToken(t *testing.T, cs *mcp.ClientSession, token any, code string) string {
	t.Helper()
	p := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}}
	if token != nil {
		// Set in _meta directly: the go-sdk client's SetProgressToken
		// takes strings and integers only, a peer may send anything.
		p.Meta = mcp.Meta{"progressToken": token}
	}
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// settled returns the notifications received once one satisfies last,
// or after 10 s. The go-sdk client hands notifications to their handler
// apart from the call's response, so the last one sent before the result
// may be handled just after the call returned.
func settled(got func() []*mcp.ProgressNotificationParams, last func(*mcp.ProgressNotificationParams) bool) []*mcp.ProgressNotificationParams {
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := got()
		if slices.ContainsFunc(n, last) || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkIncreasing fails unless every notification carries token and a
// progress above the one before.
func checkIncreasing(t *testing.T, got []*mcp.ProgressNotificationParams, token any) {
	t.Helper()
	for i, p := range got {
		if p.ProgressToken != token {
			t.Errorf("notification %d has token %#v, want %#v", i, p.ProgressToken, token)
		}
		if i > 0 && p.Progress <= got[i-1].Progress {
			t.Errorf("progress %v after %v: not increasing", p.Progress, got[i-1].Progress)
		}
	}
}

func TestProgressCarriesOutput(t *testing.T) {
	cs, got := progressClient(t)
	text := callWithToken(t, cs, "tok-1", "import time\nfor i in range(8):\n    print('line', i)\n    time.sleep(0.15)")
	if !strings.HasPrefix(text, "line 0\nline 1") || !strings.HasSuffix(text, "line 7") {
		t.Fatalf("result %q: the final result keeps the whole output", text)
	}
	n := got()
	// 8 lines over 1.2 s, at most ten notifications a second: every line
	// shows up, in order, in some notification, each at most 10 lines.
	if len(n) < 4 || len(n) > 13 {
		t.Fatalf("%d notifications for 8 lines over 1.2 s", len(n))
	}
	checkIncreasing(t, n, "tok-1")
	seen := 0
	for _, p := range n {
		if strings.Count(p.Message, "\n") >= live.ProgressLines {
			t.Errorf("message of more than %d lines: %q", live.ProgressLines, p.Message)
		}
		for _, line := range strings.Split(p.Message, "\n") {
			if line == "line "+string(rune('0'+seen)) {
				seen++
			}
		}
	}
	if seen < 7 {
		t.Fatalf("the lines did not all come, in order, through the notifications: %d seen in %+v", seen, n)
	}
}

func TestProgressFromCode(t *testing.T) {
	cs, got := progressClient(t)
	callWithToken(t, cs, 42, `from mcp import runtime
import time
for i in range(5):
    runtime.report_progress(i + 1, 5, "file %d of 5" % (i + 1))
    time.sleep(0.15)`)
	n := settled(got, func(p *mcp.ProgressNotificationParams) bool { return p.Progress == 5 })
	checkIncreasing(t, n, any(float64(42)))
	// Five reports 150 ms apart: each goes out as it comes (two that a
	// loaded machine delivers closer than 100 ms are folded into the
	// later), carrying the code's figure, total and message.
	if len(n) < 3 || len(n) > 5 || n[len(n)-1].Progress != 5 {
		t.Fatalf("%d notifications, want the code's 5 ending at 5: %+v", len(n), n)
	}
	for i, p := range n {
		if p.Progress != float64(int(p.Progress)) || p.Total != 5 || p.Message != fmt.Sprintf("file %d of 5", int(p.Progress)) {
			t.Errorf("notification %d: %+v", i, p)
		}
	}
}

func TestProgressHeartbeat(t *testing.T) {
	cs, got := progressClient(t)
	callWithToken(t, cs, "beat", "import time\ntime.sleep(3.5)")
	n := got()
	if len(n) != 1 || !strings.HasPrefix(n[0].Message, "running for ") {
		t.Fatalf("a silent 3.5 s call: %+v, want one heartbeat", n)
	}
}

func TestNoProgressWithoutToken(t *testing.T) {
	t.Parallel()
	cs, got := progressClient(t)
	callWithToken(t, cs, nil, "from mcp import runtime\nimport time\nfor i in range(3):\n    print(i); runtime.report_progress(i); time.sleep(0.15)")
	if n := got(); len(n) != 0 {
		t.Fatalf("notifications without a token: %+v", n)
	}
}

func TestProgressTokenOfAnyJSONType(t *testing.T) {
	for _, token := range []any{"t", float64(7), 2.5, "ünïcode ✓", map[string]any{"k": "v"}, []any{float64(1)}, true} {
		cs, got := progressClient(t)
		text := callWithToken(t, cs, token, "print('hi')")
		if text != "hi" {
			t.Errorf("token %#v: result %q", token, text)
		}
		n := got()
		if len(n) > 1 {
			t.Errorf("token %#v: %d notifications for one line", token, len(n))
		}
		if len(n) == 1 && fmt.Sprint(n[0].ProgressToken) != fmt.Sprint(token) {
			t.Errorf("token %#v came back as %#v", token, n[0].ProgressToken)
		}
	}
}

func TestProgressBoundedUnderFloods(t *testing.T) {
	t.Parallel()
	cs, got := progressClient(t)
	// 20 MB of output without a newline, invalid UTF-8, and a flood of
	// reports: the call ends normally, the result keeps the cap, every
	// notification stays small.
	text := callWithToken(t, cs, "flood", `import sys
from mcp import runtime
for i in range(20):
    sys.stdout.write("y" * (1 << 20))
sys.stdout.flush()
sys.stdout.buffer.write(b"\xff\xfe bad bytes\n")
for i in range(10000):
    runtime.report_progress(i, 10000)
print("end")`)
	if len(text) > 1<<20+1024 || !strings.Contains(text, "truncated") {
		t.Fatalf("result of %d bytes, want the 1 MiB cap with its marker: %q…", len(text), text[:min(len(text), 80)])
	}
	for _, p := range got() {
		if len(p.Message) > live.ProgressBytes {
			t.Fatalf("a message of %d bytes", len(p.Message))
		}
	}
	if again := callWithToken(t, cs, nil, "print('next')"); again != "next" {
		t.Fatalf("the next call: %q", again)
	}
}

func TestProgressLastReportNotWithheld(t *testing.T) {
	t.Parallel()
	cs, got := progressClient(t)
	// The last report comes right before the call ends, and one comes
	// within 50 ms of the one before and is followed by silence: both
	// reach the client.
	callWithToken(t, cs, "last", `from mcp import runtime
import time
runtime.report_progress(1, 3, 'one')
runtime.report_progress(2, 3, 'two')
time.sleep(0.5)
runtime.report_progress(3, 3, 'three')`)
	var msgs []string
	for _, p := range settled(got, func(p *mcp.ProgressNotificationParams) bool { return p.Message == "three" }) {
		msgs = append(msgs, p.Message)
	}
	if len(msgs) < 2 || msgs[len(msgs)-1] != "three" || !slices.Contains(msgs, "two") {
		t.Fatalf("messages %q: want two and three, three last", msgs)
	}
}
