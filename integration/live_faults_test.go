//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os/exec"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// Live calls under bad input, through a raw JSON-RPC client that sees every
// byte the bridge writes: progress tokens of unusual JSON types, floods of
// output and of reports, invalid UTF-8, and clients that vanish mid-stream.

// A rawMsg is one line the bridge wrote on stdout.
type rawMsg struct {
	at     time.Time
	line   []byte
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// A rawBridge is the binary driven over its stdio, line by line.
type rawBridge struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *lockedBuffer
	msgs   chan rawMsg // closed when stdout ends
	nextID int
}

// startRaw starts the binary on engine name and initializes an MCP session.
func startRaw(t *testing.T, name string, env ...string) *rawBridge {
	t.Helper()
	cmd := exec.Command(binary(t), "run")
	cmd.Env = append(envWithout("MCP_BRIDGE_RUNTIME"), append([]string{"MCP_BRIDGE_RUNTIME=" + name, "MCP_BRIDGE_LOG_LEVEL=WARN"}, env...)...)
	b := &rawBridge{t: t, cmd: cmd, stderr: &lockedBuffer{}, msgs: make(chan rawMsg, 1<<14), nextID: 1}
	cmd.Stderr = b.stderr
	var err error
	if b.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if b.stdout, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("the bridge's stderr:\n%s", b.stderr.tail(8<<10))
		}
	})
	go func() {
		defer close(b.msgs)
		r := bufio.NewReaderSize(b.stdout, 1<<16)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				m := rawMsg{at: time.Now(), line: line}
				if jerr := json.Unmarshal(line, &m); jerr != nil {
					m.Method = "!unparsable: " + jerr.Error()
				}
				b.msgs <- m
			}
			if err != nil {
				return
			}
		}
	}()
	b.send(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "integration-raw", "version": "1"}}})
	if m := b.response(json.RawMessage("0"), nil); m.Error != nil {
		t.Fatalf("initialize: %s", m.line)
	}
	b.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return b
}

func (b *rawBridge) send(msg any) {
	b.t.Helper()
	data, err := json.Marshal(msg)
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.stdin.Write(append(data, '\n')); err != nil {
		b.t.Fatalf("writing to the bridge: %v", err)
	}
}

// response reads messages until the response with id, passing the others
// to other (nil: dropped).
func (b *rawBridge) response(id json.RawMessage, other func(rawMsg)) rawMsg {
	b.t.Helper()
	deadline := time.After(3 * time.Minute)
	for {
		select {
		case m, ok := <-b.msgs:
			if !ok {
				b.t.Fatalf("the bridge closed its stdout before answering %s", id)
			}
			if m.Method == "" && bytes.Equal(bytes.TrimSpace(m.ID), id) {
				return m
			}
			if other != nil {
				other(m)
			}
		case <-deadline:
			b.t.Fatalf("no answer to request %s", id)
		}
	}
}

// A rawNote is one notifications/progress as written by the bridge.
type rawNote struct {
	at       time.Time
	size     int // bytes of the line
	token    json.RawMessage
	progress float64
	total    float64
	message  string
}

// A rawCall is a run_python call seen on the wire.
type rawCall struct {
	notes      []rawNote
	others     []rawMsg // anything else but the answer
	text       string
	isError    bool
	resultSize int
	elapsed    time.Duration
	badUTF8    int // lines that are not valid UTF-8
}

// call runs run_python with args, with progress token token (raw JSON;
// nil: none), and returns what the bridge wrote until the answer.
func (b *rawBridge) call(token json.RawMessage, args map[string]any) rawCall {
	b.t.Helper()
	id := b.nextID
	b.nextID++
	params := map[string]any{"name": "run_python", "arguments": args}
	if token != nil {
		params["_meta"] = map[string]any{"progressToken": token}
	}
	began := time.Now()
	b.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	var c rawCall
	check := func(m rawMsg) {
		if !utf8.Valid(m.line) {
			c.badUTF8++
		}
	}
	resp := b.response(json.RawMessage(strconv.Itoa(id)), func(m rawMsg) {
		check(m)
		if m.Method != "notifications/progress" {
			c.others = append(c.others, m)
			return
		}
		var p struct {
			Token    json.RawMessage `json:"progressToken"`
			Progress float64         `json:"progress"`
			Total    float64         `json:"total"`
			Message  string          `json:"message"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			b.t.Errorf("a progress notification that does not decode: %v: %.300s", err, m.line)
		}
		c.notes = append(c.notes, rawNote{at: m.at, size: len(m.line), token: p.Token, progress: p.Progress, total: p.Total, message: p.Message})
	})
	check(resp)
	c.elapsed = time.Since(began)
	c.resultSize = len(resp.line)
	if resp.Error != nil {
		b.t.Fatalf("run_python %.80q: a JSON-RPC error: %.500s", args["code"], resp.line)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		b.t.Fatalf("run_python's result: %v: %.300s", err, resp.line)
	}
	for _, ct := range res.Content {
		c.text += ct.Text
	}
	c.isError = res.IsError
	return c
}

// sameJSON reports whether two JSON values are equal as values: numbers
// compared exactly, whatever their spelling (1e3 is 1000).
func sameJSON(a, b json.RawMessage) bool {
	dec := func(r json.RawMessage) any {
		d := json.NewDecoder(bytes.NewReader(r))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return nil
		}
		if n, ok := v.(json.Number); ok {
			if q, ok := new(big.Rat).SetString(n.String()); ok {
				return q.RatString()
			}
		}
		return v
	}
	return reflect.DeepEqual(dec(a), dec(b))
}

// checkRaw checks the bounds every call must keep: valid UTF-8 on the
// wire, every notification for the call's token, progress strictly
// increasing, messages of at most 10 lines and 1 KiB (maxMsg bytes for
// the code's own reports), at most about ten a second.
func checkRaw(t *testing.T, what string, c rawCall, token json.RawMessage, maxMsg int) {
	t.Helper()
	sizes, maxSize := 0, 0
	for _, n := range c.notes {
		sizes += n.size
		maxSize = max(maxSize, n.size)
	}
	t.Logf("%s: %d notifications in %v (largest line %d bytes, %d in all), a %d-byte answer of %d characters",
		what, len(c.notes), c.elapsed.Round(time.Millisecond), maxSize, sizes, c.resultSize, len(c.text))
	if c.badUTF8 > 0 {
		t.Errorf("%s: %d lines on the wire are not valid UTF-8", what, c.badUTF8)
	}
	for _, m := range c.others {
		t.Errorf("%s: an unexpected message during the call: %.300s", what, m.line)
	}
	if token == nil && len(c.notes) > 0 {
		t.Errorf("%s: %d notifications for a call without a progress token", what, len(c.notes))
	}
	for i, n := range c.notes {
		if token != nil && !sameJSON(n.token, token) {
			t.Errorf("%s: notification %d carries token %s, want %s", what, i, n.token, token)
		}
		if i > 0 && !(n.progress > c.notes[i-1].progress) {
			t.Errorf("%s: notification %d has progress %v after %v", what, i, n.progress, c.notes[i-1].progress)
		}
		if len(n.message) > maxMsg || strings.Count(n.message, "\n") >= 10 {
			t.Errorf("%s: notification %d carries a message of %d bytes, %d lines", what, i, len(n.message), strings.Count(n.message, "\n")+1)
		}
	}
	// The bridge spaces notifications 100 ms apart, so a call of d seconds
	// gets at most 1 + 10 d of them (the client's d is the longer).
	if limit := 2 + int(10*c.elapsed.Seconds()); len(c.notes) > limit {
		t.Errorf("%s: %d notifications in %v, more than ten a second", what, len(c.notes), c.elapsed)
	}
}

var reportMessage = regexp.MustCompile(`^r\d+$`)

var truncationMarker = regexp.MustCompile(`\[output truncated: (\d+) more bytes not shown\]`)

// truncatedBytes returns the byte count of text's truncation marker, -1 without.
func truncatedBytes(text string) int {
	m := truncationMarker.FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestLiveProgressBadInput sends run_python calls with progress tokens of
// unusual JSON types and code that floods the output, writes invalid UTF-8
// or reports progress ten thousand times: every call ends normally with
// its output capped (1 MiB and a truncation marker), the notifications
// stay bounded, and the session serves the next call.
func TestLiveProgressBadInput(t *testing.T) {
	t.Parallel()
	const maxOut = 1 << 20
	onEngine(t, "podman", func(t *testing.T, e testEngine) {
		b := startRaw(t, e.Name())
		tok := json.RawMessage("42")
		alive := func(what string) {
			t.Helper()
			c := b.call(tok, map[string]any{"code": "print('alive')"})
			if c.isError || c.text != "alive" {
				t.Errorf("the call after %s: %q", what, c.text)
			}
		}

		for _, token := range []string{`1.5`, `-0.125`, `"🚀 prögress ✓ \u2028 \"quoted\" \\ <&>"`, `""`, `1e3`} {
			c := b.call(json.RawMessage(token), map[string]any{"code": tickCode(3, 0.3)})
			checkRaw(t, "token "+token, c, json.RawMessage(token), 1<<10)
			if c.isError || c.text != "tick 0\ntick 1\ntick 2" || len(c.notes) == 0 {
				t.Errorf("token %s: %q with %d notifications", token, c.text, len(c.notes))
			}
		}

		c := b.call(tok, map[string]any{"code": "for _ in range(100_000):\n    print('x' * 1000)"})
		checkRaw(t, "100 MB of lines", c, tok, 1<<10)
		if c.isError || !strings.HasPrefix(c.text, strings.Repeat("x", 1000)+"\n") || len(c.text) > maxOut+200 {
			t.Errorf("100 MB of lines: isError %v, %d characters, want at most 1 MiB and a marker", c.isError, len(c.text))
		}
		if n := truncatedBytes(c.text); n != 100_100_000-maxOut {
			t.Errorf("100 MB of lines: the marker says %d bytes dropped, want %d (tail %q)", n, 100_100_000-maxOut, c.text[max(0, len(c.text)-120):])
		}
		alive("100 MB of lines")

		c = b.call(tok, map[string]any{"code": "import sys\nfor _ in range(100):\n    sys.stdout.write('y' * 10_000)\nsys.stdout.flush()"})
		checkRaw(t, "1 MB without a newline", c, tok, 1<<10)
		// The whole megabyte, or (should the result be cut to a budget
		// below the cap) its head and tail around a marker.
		if whole := strings.Repeat("y", 1_000_000); c.isError || len(c.text) > maxOut ||
			!strings.HasPrefix(c.text, "yyyyyyyy") || !strings.HasSuffix(c.text, "yyyyyyyy") || (c.text != whole && !strings.Contains(c.text, "bytes")) {
			t.Errorf("1 MB without a newline: isError %v, %d characters %.80q…", c.isError, len(c.text), c.text)
		}
		c = b.call(tok, map[string]any{"code": "import sys\nsys.stdout.write('z' * (3 << 20))"})
		checkRaw(t, "3 MiB in one write without a newline", c, tok, 1<<10)
		if n := truncatedBytes(c.text); c.isError || n != 2<<20 || !strings.HasPrefix(c.text, "zzzzzzzz") || len(c.text) > maxOut+200 {
			t.Errorf("3 MiB in one write: isError %v, %d characters, %d bytes dropped (want %d)", c.isError, len(c.text), n, 2<<20)
		}
		alive("output without newlines")

		c = b.call(tok, map[string]any{"code": `import sys, time
w = sys.stdout.buffer
for chunk in (b'bad \xff\xfe end\n', b'split \xe2\x98', b'\x83 snowman\n', b'lone \xed\xa0\x80 surrogate\n', b'\xc3(\n', b'\xf0\x9f'):
    w.write(chunk); w.flush(); time.sleep(0.15)
sys.stderr.buffer.write(b'err \x80\x81\n'); sys.stderr.flush()
w.write(b'\n'); print('ok')`})
		checkRaw(t, "invalid UTF-8", c, tok, 1<<10)
		for _, want := range []string{"bad \ufffd\ufffd end", "split ☃ snowman", "lone ", " surrogate", "ok", "err \ufffd\ufffd"} {
			if c.isError || !strings.Contains(c.text, want) {
				t.Errorf("invalid UTF-8: the result %q lacks %q", c.text, want)
			}
		}
		for i, n := range c.notes {
			if strings.Contains(n.message, "split \ufffd") {
				t.Errorf("notification %d split a character written in two pieces: %q", i, n.message)
			}
		}
		alive("invalid UTF-8")

		c = b.call(tok, map[string]any{"code": `import time
from mcp import runtime
for i in range(1, 10001):
    runtime.report_progress(i, total=10000, message=f'r{i}')
    if i % 500 == 0:
        time.sleep(0.1)
print('reported')`})
		checkRaw(t, "10,000 reports", c, tok, 1<<10)
		if c.isError || c.text != "reported" || len(c.notes) == 0 {
			t.Errorf("10,000 reports: %q with %d notifications", c.text, len(c.notes))
		}
		for i, n := range c.notes {
			if reportMessage.MatchString(n.message) && (n.message != fmt.Sprintf("r%d", int(n.progress)) || n.total != 10000 || n.progress < 1 || n.progress > 10000) {
				t.Errorf("10,000 reports: notification %d is %q at %v of %v, want r<progress> of 10000", i, n.message, n.progress, n.total)
			}
		}
		c = b.call(tok, map[string]any{"code": `import mcp_sandbox_runtime as rt, time
class Bad:
    def __str__(self): raise RuntimeError('no str')
    def __float__(self): raise RuntimeError('no float')
for args, kw in [((float('nan'),), {}), ((float('inf'), 2), {}), (('abc',), {}), ((Bad(),), {}), ((1,), {'message': Bad()}),
                 ((2,), {'total': -5, 'message': '☃' * 5000}), ((3,), {'total': float('nan'), 'message': 'x' * 100000}),
                 ((4,), {'total': 'many'}), ((), {})]:
    try:
        print(rt.report_progress(*args, **kw), end=' ')
    except TypeError as e:
        print('TypeError', end=' ')
    time.sleep(0.12)
print()`})
		checkRaw(t, "reports with bad arguments", c, tok, 4<<10)
		if c.isError || strings.TrimSpace(c.text) != "None None None None None None None None TypeError" {
			t.Errorf("reports with bad arguments: %q, want each ignored (a missing argument is Python's TypeError)", c.text)
		}
		for i, n := range c.notes {
			if utf8.RuneCountInString(n.message) > 1024 {
				t.Errorf("reports with bad arguments: notification %d carries a message of %d characters, over 1,024", i, utf8.RuneCountInString(n.message))
			}
			if len(n.message) > 1<<10 {
				t.Logf("reports with bad arguments: notification %d carries a %d-byte message (1,024 characters of ☃; the output bound is 1 KiB)", i, len(n.message))
			}
		}
		alive("floods of reports")

		c = b.call(nil, map[string]any{"code": "import time\nfrom mcp import runtime\nfor i in range(5):\n    runtime.report_progress(i)\n    print(i, flush=True)\n    time.sleep(0.2)\ntime.sleep(3.5)"})
		checkRaw(t, "no token", c, nil, 1<<10)
		if c.isError || c.text != "0\n1\n2\n3\n4" {
			t.Errorf("a call without a token: %q", c.text)
		}
		alive("a call without a token")
	})
}

// TestLiveProgressTokenEchoedExactly sends integer progress tokens at the
// edges of float64's exact range: MCP wants each notification to carry the
// token of the request, so a client can match it. (Beyond 2^53 the go-sdk
// decodes _meta into float64 and the echo is rounded: 2^53 + 1 comes back
// as 2^53. That is the SDK's limit, noted in the README, not tested here.)
func TestLiveProgressTokenEchoedExactly(t *testing.T) {
	t.Parallel()
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		b := startRaw(t, e.Name())
		for _, token := range []string{`9007199254740992`, `-9007199254740992`, `123456789012345`, `0`} {
			c := b.call(json.RawMessage(token), map[string]any{"code": tickCode(2, 0.2)})
			checkRaw(t, "token "+token, c, json.RawMessage(token), 1<<10)
			if c.isError || c.text != "tick 0\ntick 1" || len(c.notes) == 0 {
				t.Errorf("token %s: %q with %d notifications", token, c.text, len(c.notes))
			}
		}
	})
}

// TestLiveClientGoneMidStream drops the client while the bridge streams
// progress notifications: the go-sdk client closing its session (go-sdk
// waits for its calls in flight, so the code ends by itself), a client
// closing the bridge's stdin while it still reads (a client shutting
// down), and a client that vanishes (both of its pipe ends closed at once,
// as when it is killed). Each time the bridge exits by itself with status
// 0, its running call stopped, and leaves no container behind.
func TestLiveClientGoneMidStream(t *testing.T) {
	t.Parallel()
	const flood = "import time\nwhile True:\n    print('flowing ' * 20, flush=True)\n    time.sleep(0.002)"
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("go-sdk-close", func(t *testing.T) {
			notes := newNoteLog()
			cs, cmd := connectLive(t, e.Name(), notes)
			go liveCall(context.Background(), cs, notes, "flood", map[string]any{"timeout": 100,
				"code": "import time\nfor i in range(1000):\n    print('flowing ' * 20, i, flush=True)\n    time.sleep(0.004)"})
			eventually(t, "notifications flow", func() bool { return len(notes.of("flood")) >= 5 })
			pid := cmd.Process.Pid
			if n := len(bridgeContainers(t, e, pid)); n != 1 {
				t.Fatalf("%d containers of the bridge mid-stream, want 1", n)
			}
			err := cs.Close()
			if err != nil || cmd.ProcessState == nil || !cmd.ProcessState.Success() {
				t.Errorf("closing the session mid-stream: %v, the bridge ended with %v, want a clean exit", err, cmd.ProcessState)
			}
			checkTicklessNotes(t, notes.of("flood"))
			eventually(t, "no container of the bridge is left", func() bool { return len(bridgeContainers(t, e, pid)) == 0 })
		})
		for _, mode := range []string{"stdin-closed", "client-vanishes"} {
			t.Run(mode, func(t *testing.T) {
				b := startRaw(t, e.Name())
				b.send(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": map[string]any{
					"name": "run_python", "arguments": map[string]any{"code": flood, "timeout": 100}, "_meta": map[string]any{"progressToken": "gone"}}})
				seen := 0
				deadline := time.After(time.Minute)
				for seen < 5 {
					select {
					case m := <-b.msgs:
						if m.Method == "notifications/progress" {
							seen++
						}
					case <-deadline:
						t.Fatalf("%d notifications within a minute", seen)
					}
				}
				pid := b.cmd.Process.Pid
				if n := len(bridgeContainers(t, e, pid)); n != 1 {
					t.Fatalf("%d containers of the bridge mid-stream, want 1", n)
				}
				if mode == "stdin-closed" {
					go func() {
						for range b.msgs {
						}
					}()
				} else {
					b.stdout.Close()
				}
				b.stdin.Close()
				exited := make(chan error, 1)
				go func() { exited <- b.cmd.Wait() }()
				select {
				case err := <-exited:
					st := b.cmd.ProcessState
					ws, _ := st.Sys().(syscall.WaitStatus)
					if err != nil || !st.Success() {
						t.Errorf("the bridge ended with %v (signal %v) when its client went mid-stream, want a clean exit", st, ws.Signal())
					}
				case <-time.After(60 * time.Second):
					// The call's timeout is 100 s: the bridge must stop it.
					t.Errorf("the bridge was still running a minute after its client went")
					b.cmd.Process.Signal(syscall.SIGTERM)
					<-exited
				}
				eventually(t, "no container of the bridge is left", func() bool { return len(bridgeContainers(t, e, pid)) == 0 })
			})
		}
	})
}

// checkTicklessNotes checks the notifications of a flood: progress strictly
// increasing, messages bounded.
func checkTicklessNotes(t *testing.T, notes []liveNote) {
	t.Helper()
	checkLiveNotes(t, "a flood", notes)
	if limit := 2 + 10*int(notes[len(notes)-1].AtMs/1000+1); len(notes) > limit {
		t.Errorf("%d notifications in %.0f ms, more than ten a second", len(notes), notes[len(notes)-1].AtMs)
	}
}
