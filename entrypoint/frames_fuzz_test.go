package entrypoint

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

// FuzzParseFrame feeds arbitrary lines to the decoder of sandbox frames:
// it never panics, and what it accepts has the invariants the host relies on.
func FuzzParseFrame(f *testing.F) {
	for _, seed := range []string{
		`{"t":"ready","protocol":1,"runtime":"1.0","python":"3.11.2","pid":7,"boot":1.5,"sent":1.6}`,
		`{"t":"out","id":"3","stream":"stdout","data":"hi\n"}`,
		`{"t":"out","id":3,"stream":"stdin","data":null}`,
		`{"t":"rpc","id":12,"payload":{"type":"list_servers"}}`,
		`{"t":"rpc","id":-1,"payload":[1]}`,
		`{"t":"result","id":"3","status":"ok","exit_code":0,"duration_ms":0.3,"dropped":{"stdout":5},"killed":2}`,
		`{"t":"result","id":"3","status":"exit","exit_code":1e99}`,
		`{"t":null}`, `[]`, `"x"`, `{"t":"ready"}`, "\xff\xfe", `{"t":"rpc","id":1e3,"payload":{}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := parseFrame(line)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("an error that is not ErrProtocol: %v", err)
			}
			return
		}
		switch fr.T {
		case frameReady:
		case frameOut:
			if fr.Stream != "stdout" && fr.Stream != "stderr" {
				t.Fatalf("accepted out frame %+v", fr)
			}
		case frameRPC:
			if fr.RPCID <= 0 || len(bytes.TrimSpace(fr.Payload)) == 0 || bytes.TrimSpace(fr.Payload)[0] != '{' {
				t.Fatalf("accepted rpc frame %+v", fr)
			}
		case frameResult:
		default:
			t.Fatalf("accepted a frame of type %q", fr.T)
		}
	})
}

// FuzzReadFrameLine checks that a frame line is never longer than its
// limit, whatever the stream holds.
func FuzzReadFrameLine(f *testing.F) {
	f.Add([]byte("short\nline\n"), 8)
	f.Add(bytes.Repeat([]byte("x"), 100), 16)
	f.Add([]byte("no newline"), 64)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 1 || max > 1<<16 {
			return
		}
		r := bufio.NewReaderSize(bytes.NewReader(data), 16)
		for {
			line, err := readFrameLine(r, max)
			if err != nil {
				return
			}
			if len(line) > max {
				t.Fatalf("a %d-byte line under a %d-byte limit", len(line), max)
			}
			if bytes.IndexByte(line, '\n') >= 0 {
				t.Fatalf("a line with a newline: %q", line)
			}
		}
	})
}
