//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Live calls: notifications/progress while run_python runs, and
// cancellation, from real clients over the real binary.

// A liveNote is one notifications/progress as a client received it.
type liveNote struct {
	AtMs     float64  `json:"atMs"` // since the call's start, for the logs only
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total"`
	Message  *string  `json:"message"`
}

func (n liveNote) message() string {
	if n.Message == nil {
		return ""
	}
	return *n.Message
}

func (n liveNote) total() float64 {
	if n.Total == nil {
		return 0
	}
	return *n.Total
}

// tickCode prints "tick N" for N in 0..n-1, one line every every seconds.
func tickCode(n int, every float64) string {
	return fmt.Sprintf("import time\nfor i in range(%d):\n    print('tick', i, flush=True)\n    time.sleep(%g)", n, every)
}

var tickLine = regexp.MustCompile(`^tick (\d+)$`)

// checkLiveNotes checks what holds for every progress notification of a call:
// progress strictly increasing, an output message of at most 10 lines and
// 1 KiB.
func checkLiveNotes(t *testing.T, what string, notes []liveNote) {
	t.Helper()
	for i, n := range notes {
		if i > 0 && !(n.Progress > notes[i-1].Progress) {
			t.Errorf("%s: notification %d has progress %v after %v: not strictly increasing", what, i, n.Progress, notes[i-1].Progress)
		}
		if m := n.message(); len(m) > 1<<10 || strings.Count(m, "\n") >= 10 {
			t.Errorf("%s: notification %d carries %d bytes, %d lines: over 1 KiB or 10 lines", what, i, len(m), strings.Count(m, "\n")+1)
		}
	}
}

// checkTicks checks the "tick N" lines carried by notes: consecutive within
// a message, the newest line advancing from message to message; it returns
// how many distinct lines the messages showed.
func checkTicks(t *testing.T, what string, notes []liveNote) int {
	t.Helper()
	seen := map[int]bool{}
	newest := -1
	for i, n := range notes {
		var nums []int
		for _, line := range strings.Split(n.message(), "\n") {
			if m := tickLine.FindStringSubmatch(line); m != nil {
				v, _ := strconv.Atoi(m[1])
				nums = append(nums, v)
			}
		}
		if len(nums) == 0 {
			continue
		}
		for j := 1; j < len(nums); j++ {
			if nums[j] != nums[j-1]+1 {
				t.Errorf("%s: notification %d shows lines out of order: %v", what, i, nums)
			}
		}
		if last := nums[len(nums)-1]; last <= newest {
			t.Errorf("%s: notification %d ends with tick %d after a notification that showed tick %d", what, i, last, newest)
		} else {
			newest = last
		}
		for _, v := range nums {
			seen[v] = true
		}
	}
	return len(seen)
}

// logNotes logs the arrival times of notes (timing is for benchmarks, not
// assertions).
func logNotes(t *testing.T, what string, notes []liveNote) {
	t.Helper()
	var b strings.Builder
	for _, n := range notes {
		fmt.Fprintf(&b, "\n  %8.1f ms  progress %-12v total %-6v %.60q", n.AtMs, n.Progress, n.total(), n.message())
	}
	t.Logf("%s: %d notifications%s", what, len(notes), b.String())
}

// A liveStep is one call of integration/node/live.mjs.
type liveStep struct {
	Args                   map[string]any `json:"args"`
	Progress               *bool          `json:"progress,omitempty"`
	Timeout                int            `json:"timeout,omitempty"`
	ResetTimeoutOnProgress *bool          `json:"resetTimeoutOnProgress,omitempty"`
	AbortAfterMs           *int           `json:"abortAfterMs,omitempty"`
}

// A liveResult is what live.mjs recorded of one step.
type liveResult struct {
	Notifications     []liveNote     `json:"notifications"`
	Text              string         `json:"text"`
	IsError           bool           `json:"isError"`
	StructuredContent map[string]any `json:"structuredContent"`
	Error             *struct {
		Code    *int   `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	ElapsedMs float64 `json:"elapsedMs"`
}

// runLiveTS runs steps through the TypeScript SDK's client (live.mjs) on
// one bridge process.
func runLiveTS(t *testing.T, home, runtime string, steps []liveStep) []liveResult {
	t.Helper()
	var res struct {
		Steps []liveResult `json:"steps"`
	}
	runNode(t, "live.mjs", []string{"HOME=" + home, "MCP_BRIDGE_RUNTIME=" + runtime, "MCP_BRIDGE_LOG_LEVEL=ERROR"}, steps, &res)
	if len(res.Steps) != len(steps) {
		t.Fatalf("%d results for %d steps", len(res.Steps), len(steps))
	}
	return res.Steps
}

func livePtr[T any](v T) *T { return &v }

// TestLiveTypeScriptClient follows calls with the TypeScript SDK's client
// (onprogress, resetTimeoutOnProgress, AbortController): streamed lines in
// order, long calls kept alive by progress and by heartbeats under a
// shorter request timeout, and an aborted call interrupted with the
// session's state kept.
func TestLiveTypeScriptClient(t *testing.T) {
	t.Parallel()
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		steps := []liveStep{
			{Args: map[string]any{"code": "x = 0"}},
			{Args: map[string]any{"code": tickCode(6, 0.4)}},
			{Args: map[string]any{"code": "import time\nfor i in range(10):\n    print('still here', i, flush=True)\n    time.sleep(0.5)\nprint('done')"},
				Timeout: 2000, ResetTimeoutOnProgress: livePtr(true)},
			{Args: map[string]any{"code": "import time\ntime.sleep(5)\nprint('woke')"}, Timeout: 4000, ResetTimeoutOnProgress: livePtr(true)},
			{Args: map[string]any{"code": "import time\nx = 1\nfor i in range(100): time.sleep(0.1)\nx = 2"}, AbortAfterMs: livePtr(1000)},
			{Args: map[string]any{"code": "print(x)"}},
			{Args: map[string]any{"code": "print(i < 99)"}},
		}
		r := runLiveTS(t, t.TempDir(), e.Name(), steps)
		for i, s := range r {
			logNotes(t, fmt.Sprintf("step %d (result after %.0f ms)", i, s.ElapsedMs), s.Notifications)
			checkLiveNotes(t, fmt.Sprintf("step %d", i), s.Notifications)
		}

		ticks := r[1]
		if ticks.IsError || ticks.Error != nil {
			t.Fatalf("the streaming call failed: %q %+v", ticks.Text, ticks.Error)
		}
		if len(ticks.Notifications) < 4 {
			t.Errorf("%d notifications for 6 lines over 2.4 s, want at least 4", len(ticks.Notifications))
		}
		if n := checkTicks(t, "streaming call", ticks.Notifications); n < 4 {
			t.Errorf("the notifications showed %d of the 6 lines, want at least 4", n)
		}
		if want := "tick 0\ntick 1\ntick 2\ntick 3\ntick 4\ntick 5"; ticks.Text != want {
			t.Errorf("the final result: %q, want every line %q", ticks.Text, want)
		}

		if s := r[2]; s.Error != nil || s.IsError || !strings.HasSuffix(s.Text, "still here 9\ndone") {
			t.Errorf("a 5 s call under a 2 s request timeout reset by progress: %q error %+v", s.Text, s.Error)
		}
		if s := r[3]; s.Error != nil || s.IsError || s.Text != "woke" {
			t.Errorf("a silent 5 s call under a 4 s request timeout reset by heartbeats: %q error %+v", s.Text, s.Error)
		} else {
			beats := 0
			for _, n := range s.Notifications {
				if strings.HasPrefix(n.message(), "running for ") {
					beats++
				}
			}
			if beats == 0 {
				t.Errorf("the silent call got no heartbeat: %+v", s.Notifications)
			}
		}

		if s := r[4]; s.Error == nil {
			t.Errorf("the aborted call returned a result: %q", s.Text)
		} else {
			t.Logf("the aborted call: %q after %.0f ms", s.Error.Message, s.ElapsedMs)
		}
		if s := r[5]; s.Error != nil || s.IsError || s.Text != "1" {
			t.Errorf("x after the aborted call: %q error %+v, want 1 (state kept, the rest of the code never ran)", s.Text, s.Error)
		}
		if s := r[6]; s.Text != "True" {
			t.Errorf("the aborted loop's counter: i < 99 is %q, want True (interrupted)", s.Text)
		}
	})
}

// A noteLog collects the progress notifications a go-sdk client receives,
// by token.
type noteLog struct {
	mu    sync.Mutex
	began map[any]time.Time
	notes map[any][]liveNote
	seen  chan any // the token of each notification, never blocking
}

func newNoteLog() *noteLog {
	return &noteLog{began: map[any]time.Time{}, notes: map[any][]liveNote{}, seen: make(chan any, 1<<12)}
}

func (l *noteLog) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p := req.Params
	l.mu.Lock()
	tok := normToken(p.ProgressToken)
	n := liveNote{AtMs: float64(time.Since(l.began[tok]).Microseconds()) / 1000, Progress: p.Progress}
	if p.Total != 0 {
		n.Total = livePtr(p.Total)
	}
	if p.Message != "" {
		n.Message = livePtr(p.Message)
	}
	l.notes[tok] = append(l.notes[tok], n)
	l.mu.Unlock()
	select {
	case l.seen <- tok:
	default:
	}
}

// normToken makes a token decoded from JSON comparable with the int the
// test sent.
func normToken(tok any) any {
	switch v := tok.(type) {
	case float64:
		if v == math.Trunc(v) {
			return int(v)
		}
	case int64:
		return int(v)
	}
	return tok
}

func (l *noteLog) start(tok any) {
	l.mu.Lock()
	l.began[tok] = time.Now()
	l.mu.Unlock()
}

func (l *noteLog) of(tok any) []liveNote {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]liveNote(nil), l.notes[tok]...)
}

// connectLive starts the binary with the go-sdk client following
// progress into notes.
func connectLive(t *testing.T, name string, notes *noteLog, env ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	stderr := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the bridge's stderr:\n%s", stderr.tail(8<<10))
		}
	})
	cs, cmd, _ := launchBridge(t, append([]string{"MCP_BRIDGE_RUNTIME=" + name, "MCP_BRIDGE_LOG_LEVEL=ERROR"}, env...), stderr,
		&mcp.ClientOptions{ProgressNotificationHandler: notes.handler})
	return cs, cmd
}

// liveCall runs code with progress token tok (nil: none) and returns the
// result's text and isError.
func liveCall(ctx context.Context, cs *mcp.ClientSession, notes *noteLog, tok any, args map[string]any) (string, bool, error) {
	p := &mcp.CallToolParams{Name: "run_python", Arguments: args}
	if tok != nil {
		notes.start(tok)
		p.SetProgressToken(tok)
	}
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		return "", false, err
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError, nil
}

func mustLiveCall(t *testing.T, cs *mcp.ClientSession, notes *noteLog, tok any, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	text, isErr, err := liveCall(ctx, cs, notes, tok, args)
	if err != nil {
		t.Fatalf("run_python %q: %v", args["code"], err)
	}
	return text, isErr
}

// TestLiveGoClientProgress follows calls with the go-sdk client: streamed
// lines in order, the code's runtime.report_progress figures as sent
// (a figure lower than the last one raised to keep progress increasing),
// heartbeats, and no notification for a call without a token.
func TestLiveGoClientProgress(t *testing.T) {
	t.Parallel()
	onEngine(t, "podman", func(t *testing.T, e testEngine) {
		notes := newNoteLog()
		cs, _ := connectLive(t, e.Name(), notes)

		text, isErr := mustLiveCall(t, cs, notes, 1, map[string]any{"code": tickCode(6, 0.4)})
		ticks := notes.of(1)
		logNotes(t, "streaming call", ticks)
		checkLiveNotes(t, "streaming call", ticks)
		if isErr || text != "tick 0\ntick 1\ntick 2\ntick 3\ntick 4\ntick 5" {
			t.Errorf("the streaming call's result: %q", text)
		}
		if len(ticks) < 4 {
			t.Errorf("%d notifications for 6 lines over 2.4 s, want at least 4", len(ticks))
		}
		if n := checkTicks(t, "streaming call", ticks); n < 4 {
			t.Errorf("the notifications showed %d of the 6 lines, want at least 4", n)
		}

		text, isErr = mustLiveCall(t, cs, notes, "reports", map[string]any{"code": `import time
from mcp import runtime
import mcp_sandbox_runtime as rt
for i, p in enumerate((10, 20, 30)):
    runtime.report_progress(p, total=100, message=f'step {i}')
    time.sleep(0.3)
rt.report_progress(5, message='backwards')
time.sleep(0.3)
print('an output line', flush=True)
time.sleep(0.3)
runtime.report_progress(99.5, 100, 'almost')
time.sleep(0.3)
print('end')`})
		reps := notes.of("reports")
		logNotes(t, "reporting call", reps)
		checkLiveNotes(t, "reporting call", reps)
		if isErr || text != "an output line\nend" {
			t.Errorf("the reporting call's result: %q", text)
		}
		byMsg := map[string]liveNote{}
		for _, n := range reps {
			byMsg[n.message()] = n
		}
		for i, want := range []struct {
			msg             string
			progress, total float64
		}{{"step 0", 10, 100}, {"step 1", 20, 100}, {"step 2", 30, 100}, {"almost", 99.5, 100}} {
			n, ok := byMsg[want.msg]
			if !ok {
				t.Errorf("report %d (%q) was not sent", i, want.msg)
			} else if n.Progress != want.progress || n.total() != want.total {
				t.Errorf("report %q arrived as progress %v total %v, want %v of %v", want.msg, n.Progress, n.total(), want.progress, want.total)
			}
		}
		if n, ok := byMsg["backwards"]; !ok {
			t.Errorf("the backwards report was not sent")
		} else if !(n.Progress > 30 && n.Progress < 30.001) || n.total() != 0 {
			t.Errorf("a report of 5 after 30 arrived as progress %v total %v, want 30 raised by a float step, no total", n.Progress, n.total())
		}
		if n, ok := byMsg["an output line"]; !ok {
			t.Errorf("the output line between reports was not sent")
		} else if !(n.Progress > 30 && n.Progress < 30.001) {
			t.Errorf("an output notification after the report of 30 has progress %v, want the last figure raised by a float step", n.Progress)
		}

		text, isErr = mustLiveCall(t, cs, notes, 3, map[string]any{"code": "import time\ntime.sleep(4)\nprint('woke')"})
		beats := notes.of(3)
		logNotes(t, "silent call", beats)
		checkLiveNotes(t, "silent call", beats)
		if isErr || text != "woke" || len(beats) == 0 || !strings.HasPrefix(beats[0].message(), "running for ") {
			t.Errorf("a silent 4 s call: %q, notifications %+v, want a heartbeat", text, beats)
		}

		text, isErr = mustLiveCall(t, cs, notes, nil, map[string]any{"code": "from mcp import runtime\nimport mcp_sandbox_runtime as rt\nimport time\n" +
			"print(runtime.report_progress(1, 2, 'x'), rt.report_progress(2))\nfor i in range(4):\n    print(i, flush=True)\n    time.sleep(0.3)"})
		if isErr || text != "None None\n0\n1\n2\n3" {
			t.Errorf("report_progress without a token: %q, want a no-op", text)
		}
		// Two calls at once (serialized by the session): each token gets
		// only its own call's output.
		var wg sync.WaitGroup
		for _, name := range []string{"A", "B"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				text, isErr, err := liveCall(context.Background(), cs, notes, name, map[string]any{
					"code": fmt.Sprintf("import time\nfor i in range(4):\n    print('%s', i, flush=True)\n    time.sleep(0.25)", name)})
				if err != nil || isErr || !strings.HasPrefix(text, name+" 0\n") {
					t.Errorf("concurrent call %s: %q %v", name, text, err)
				}
			}()
		}
		wg.Wait()
		for _, name := range []string{"A", "B"} {
			ns := notes.of(name)
			checkLiveNotes(t, "concurrent call "+name, ns)
			for _, n := range ns {
				for _, line := range strings.Split(n.message(), "\n") {
					if line != "" && !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, "running for ") {
						t.Errorf("a notification of call %s carries %q", name, line)
					}
				}
			}
		}

		time.Sleep(500 * time.Millisecond)
		notes.mu.Lock()
		for tok, ns := range notes.notes {
			if tok != 1 && tok != "reports" && tok != 3 && tok != "A" && tok != "B" {
				t.Errorf("%d notifications with token %v, which no call sent (a call without a token)", len(ns), tok)
			}
		}
		notes.mu.Unlock()
	})
}

// TestLiveGoClientReportsNotWithheld checks that the code's newest
// runtime.report_progress figure reaches the client while the call runs:
// a report made right after another (within the runtime's 50 ms folding)
// before a long step, and the last report of a call made just before it
// ends (the runtime sends it before the result, as entrypoint/PROTOCOL.md
// says).
func TestLiveGoClientReportsNotWithheld(t *testing.T) {
	t.Parallel()
	onEngine(t, "podman", func(t *testing.T, e testEngine) {
		notes := newNoteLog()
		cs, _ := connectLive(t, e.Name(), notes)
		for _, c := range []struct {
			tok, code, want string
		}{
			{"folded", "import time\nfrom mcp import runtime\nruntime.report_progress(1, 3, 'one')\nruntime.report_progress(2, 3, 'two')\ntime.sleep(1.5)\nprint('end')", "two"},
			{"last", "import time\nfrom mcp import runtime\nfor i in range(3):\n    time.sleep(0.3)\n    runtime.report_progress(i + 1, 3, f'{i + 1}/3')", "3/3"},
		} {
			mustLiveCall(t, cs, notes, c.tok, map[string]any{"code": c.code})
			found := false
			for deadline := time.Now().Add(time.Second); !found && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				for _, n := range notes.of(c.tok) {
					found = found || n.message() == c.want
				}
			}
			logNotes(t, c.tok, notes.of(c.tok))
			if !found {
				t.Errorf("%s: the report %q never reached the client", c.tok, c.want)
			}
		}
	})
}

// TestLiveGoClientCancel cancels a run_python call's context in the go-sdk
// client (notifications/cancelled): the code is interrupted where it was,
// the session keeps its state, and the next calls work. On each engine,
// and on Docker under gVisor when runsc is installed.
func TestLiveGoClientCancel(t *testing.T) {
	t.Parallel()
	forEach(t, withGVisor(engineVariants()), liveCancel)
}

// liveCancel is TestLiveGoClientCancel on the engine and OCI runtime v.
func liveCancel(t *testing.T, v variant) {
	notes := newNoteLog()
	cs, _ := connectLive(t, v.engine, notes, v.env()...)
	mustLiveCall(t, cs, notes, nil, map[string]any{"code": "x = 0"})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	began := time.Now()
	go func() {
		_, _, err := liveCall(ctx, cs, notes, "cancel-me", map[string]any{"timeout": 60,
			"code": "import time\nx = 1\nprint('started', flush=True)\nfor i in range(100): time.sleep(0.1)\nx = 2"})
		done <- err
	}()
	waitNote(t, notes, "cancel-me", "started")
	time.Sleep(time.Second)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the cancelled call returned %v, want context.Canceled", err)
		}
		t.Logf("the cancelled call returned after %v", time.Since(began).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	if text, isErr := mustLiveCall(t, cs, notes, nil, map[string]any{"code": "print(x, i < 99)"}); isErr || text != "1 True" {
		t.Errorf("after the cancel: %q, want '1 True' (state kept, interrupted mid-loop)", text)
	}
	if text, isErr := mustLiveCall(t, cs, notes, "after", map[string]any{"code": tickCode(2, 0.2)}); isErr || text != "tick 0\ntick 1" {
		t.Errorf("the next followed call: %q", text)
	}
}

// waitNote waits for a notification of token tok whose message contains
// want.
func waitNote(t *testing.T, notes *noteLog, tok any, want string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		for _, n := range notes.of(tok) {
			if strings.Contains(n.message(), want) {
				return
			}
		}
		select {
		case <-notes.seen:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no notification of %v showed %q", tok, want)
		}
	}
}

// spyHome writes a ~/MCPs config with server-everything behind
// integration/node/cancel_spy.mjs, as "spied", and returns the home and the
// spy's two logs.
func spyHome(t *testing.T) (home, cancelled, calls string) {
	t.Helper()
	dir := nodeDir(t)
	home, logs := t.TempDir(), t.TempDir()
	cancelled, calls = filepath.Join(logs, "cancelled.jsonl"), filepath.Join(logs, "calls.jsonl")
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"spied": map[string]any{
		"command": "node",
		"args":    []string{filepath.Join(dir, "cancel_spy.mjs"), filepath.Join(dir, "node_modules", ".bin", "mcp-server-everything")},
		"env":     map[string]string{"CANCEL_SPY_LOG": cancelled, "CANCEL_SPY_CALLS": calls},
	}}})
	os.MkdirAll(filepath.Join(home, "MCPs"), 0o755)
	if err := os.WriteFile(filepath.Join(home, "MCPs", "servers.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return home, cancelled, calls
}

// spyLines reads the complete lines of a JSON-lines file the spy may be
// appending to (missing: none).
func spyLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v: %q", path, err, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// TestLiveCancelProxiedCall cancels a run_python call while its code awaits
// a long tool call of a proxied server (server-everything's
// trigger-long-running-operation behind cancel_spy.mjs): the server is
// sent notifications/cancelled for that request, the code is interrupted,
// and the next calls (the server's too) work.
func TestLiveCancelProxiedCall(t *testing.T) {
	t.Parallel()
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		home, cancelledLog, callsLog := spyHome(t)
		notes := newNoteLog()
		cs, _ := connectLive(t, e.Name(), notes, "HOME="+home, "MCP_BRIDGE_LOG_LEVEL=INFO")
		if text, isErr := mustLiveCall(t, cs, notes, nil, map[string]any{"servers": []string{"spied"},
			"code": "kept = 'yes'\nprint(await mcp_spied.echo(message='up'))"}); isErr || text != "Echo: up" {
			t.Fatalf("loading the spied server: %q", text)
		}

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, _, err := liveCall(ctx, cs, notes, "proxied", map[string]any{"timeout": 100, "code": "print('calling', flush=True)\n" +
				"r = await mcp_spied.trigger_long_running_operation(duration=60, steps=60)\nkept = 'overwritten'"})
			done <- err
		}()
		var callID any
		eventually(t, "the spied server receives the long tool call", func() bool {
			for _, m := range spyLines(t, callsLog) {
				if p, _ := m["params"].(map[string]any); p["name"] == "trigger-long-running-operation" {
					callID = m["id"]
					return true
				}
			}
			return false
		})
		cancelled := time.Now()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the cancelled call returned %v, want context.Canceled", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the cancelled call did not return")
		}
		var got []map[string]any
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if got = spyLines(t, cancelledLog); len(got) > 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if len(got) == 0 {
			t.Errorf("within 10 s of the cancel, the proxied server received no notifications/cancelled for its request %v", callID)
		} else {
			t.Logf("the server received %v (%v after the cancel)", got, time.Since(cancelled).Round(time.Millisecond))
			p, _ := got[0]["params"].(map[string]any)
			if p == nil || fmt.Sprint(p["requestId"]) != fmt.Sprint(callID) {
				t.Errorf("notifications/cancelled %v, want requestId %v (the long tool call)", got[0], callID)
			}
		}
		text, isErr := mustLiveCall(t, cs, notes, "next", map[string]any{"servers": []string{"spied"},
			"code": "print(kept)\nprint(await mcp_spied.echo(message='after'))\nprint(await mcp_spied.get_sum(a=2, b=3))"})
		if isErr || !strings.HasPrefix(text, "yes\nEcho: after\n") || !strings.Contains(text, "5") {
			t.Errorf("the next call: %q, want the state kept and the server answering", text)
		}
	})
}
