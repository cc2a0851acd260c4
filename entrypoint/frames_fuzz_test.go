package entrypoint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// protocolFrames are the sandbox → host frames of PROTOCOL.md as the
// runtime sends them, and the shapes a broken or hostile one might send.
var protocolFrames = []string{
	`{"t":"ready","protocol":2,"runtime":"1","python":"3.11.2","pid":7,"boot":1795000000.5,"sent":1795000000.6}`,
	`{"t":"ready","protocol":2,"runtime":"1","python":"3.14.0","pid":7}`,
	`{"t":"started","id":"c1"}`,
	`{"t":"out","id":"c1","stream":"stdout","data":"hello\n"}`,
	`{"t":"out","id":"c1","stream":"stderr","data":"Traceback \ufffd\n"}`,
	`{"t":"rpc","id":1,"payload":{"type":"call_tool","server":"filesystem","tool":"read_text_file","arguments":{"path":"/tmp/x"}}}`,
	`{"t":"rpc","id":9007199254740993,"payload":{"type":"list_servers"}}`,
	`{"t":"result","id":"c1","status":"ok","duration_ms":0.731,"dropped":{"stdout":0,"stderr":0},"killed":0}`,
	`{"t":"result","id":"c1","status":"error","exc_type":"ZeroDivisionError","exc_message":"division by zero","traceback":"Traceback...","duration_ms":1.2,"dropped":{"stdout":0,"stderr":0},"killed":0}`,
	`{"t":"result","id":"c1","status":"interrupted","exc_type":"KeyboardInterrupt","duration_ms":2000,"dropped":{"stdout":1048576},"killed":3}`,
	`{"t":"result","id":"c1","status":"exit","exit_code":3,"duration_ms":5,"dropped":{},"killed":0}`,
	`{"t":"net_open","cid":1}`,
	`{"t":"net_data","cid":1,"len":32768}`,
	`{"t":"net_ack","cid":1,"n":65536}`,
	`{"t":"net_close","cid":1}`,
	`{"t":"lane","ok":true}`,
	`{"t":"lane","ok":false,"error":"connecting: [Errno 2] No such file or directory"}`,
	`{"t":"lane","ok":false,"broke":true,"error":"the lane ended","wrote":1024,"read":2048}`,
	`{"t":"read_data","id":"r1","len":1048576}`,
	`{"t":"read_end","id":"r1","size":50331648}`,
	`{"t":"read_end","id":"r1","errno":"ELOOP","error":"reading /workspace/out/link: a link on its path"}`,
	// Broken or hostile.
	`{"t":"lane"}`, `{"t":"lane","ok":true,"broke":true,"wrote":1,"read":1}`, `{"t":"lane","ok":false,"broke":true,"wrote":-1,"read":0}`,
	`{"t":"read_data","id":"r1","len":1048577}`, `{"t":"read_data","id":1,"len":1}`, `{"t":"read_end","id":"r1"}`,
	`{"t":"read_end","id":"r1","size":-1}`, `{"t":"read_end","id":"r1","errno":"EXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"}`,
	`{"t":"net_open"}`, `{"t":"net_open","cid":-1}`, `{"t":"net_open","cid":9007199254740993}`, `{"t":"net_open","cid":1.5}`,
	`{"t":"net_data","cid":1}`, `{"t":"net_data","cid":1,"len":0}`, `{"t":"net_data","cid":1,"data":"aGk="}`,
	`{"t":"net_ack","cid":1}`, `{"t":"net_ack","cid":1,"n":0}`, `{"t":"net_ack","cid":1,"n":262145}`, `{"t":"net_close","cid":"1"}`,
	`{"t":"result","id":"c1","status":"exit"}`,
	`{"t":"result","id":"c1","status":"ok","duration_ms":1e300}`,
	`{"t":"result","id":"c1","status":"ok","duration_ms":-1}`,
	`{"t":"result","id":"c1","status":"ok","dropped":{"stdout":9223372036854775807}}`,
	`{"t":"result","id":"c1","status":"ok","dropped":{"stdin":1}}`,
	`{"t":"result","id":"c1","status":"ok","killed":-5}`,
	`{"t":"result","id":"","status":"ok"}`,
	`{"t":"result","id":"c1","status":"exit","exit_code":1e99}`,
	`{"t":"ready","protocol":2,"boot":1e300,"sent":-1}`,
	`{"t":"out","id":3,"stream":"stdin","data":null}`,
	`{"t":"started"}`, `{"t":"started","id":7}`, `{"t":"started","id":""}`,
	`{"t":"out","id":"c1","stream":"stdout"}`,
	`{"t":"rpc","id":-1,"payload":[1]}`,
	`{"t":"rpc","id":"1","payload":{}}`,
	`{"t":"rpc","id":1e3,"payload":{}}`,
	`{"t":"rpc","id":1,"payload":"{"}`,
	`{"t":"exec","id":"c1","code":"print(1)","max_output":0}`,
	`{"t":"rpc_result","id":1,"ok":true,"result":{}}`,
	`{"T":"READY","PROTOCOL":1}`,
	`{"t":"out","t":"rpc","id":1,"payload":{}}`,
	`{"t":null}`, `{}`, `[]`, `"x"`, `null`, `{"t":"ready"}`, "\xff\xfe", ``, `{"t":"out","id":"\ud800","stream":"stdout","data":"\u0000"}`,
}

// FuzzParseFrame feeds arbitrary lines to the decoder of sandbox frames:
// it never panics, every error is errProtocol, and every frame it accepts
// has the invariants the host relies on.
func FuzzParseFrame(f *testing.F) {
	for _, seed := range protocolFrames {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := parseFrame(line)
		if err != nil {
			if !errors.Is(err, errProtocol) {
				t.Fatalf("an error that is not errProtocol: %v", err)
			}
			return
		}
		if problem := frameProblem(fr); problem != "" {
			t.Fatalf("accepted %q as %+v: %s", line, fr, problem)
		}
		if again, err := parseFrame(line); err != nil || !sameFrame(again, fr) {
			t.Fatalf("not deterministic: %+v then %+v, %v", fr, again, err)
		}
	})
}

// frameProblem returns what is wrong with an accepted frame, or "".
func frameProblem(fr frame) string {
	switch fr.T {
	case frameReady:
		if len(fr.Runtime) > maxVersionBytes || len(fr.Python) > maxVersionBytes {
			return "version strings over the bound"
		}
		for _, v := range []float64{fr.Boot, fr.Sent} {
			if v < 0 || v > maxUnixSeconds {
				return "an implausible time"
			}
		}
	case frameStarted:
		if fr.ID == "" {
			return "no call id"
		}
	case frameOut:
		if fr.ID == "" {
			return "no call id"
		}
		if fr.Stream != "stdout" && fr.Stream != "stderr" {
			return "a bad stream"
		}
	case frameProgress:
		if fr.ID == "" {
			return "no call id"
		}
		if len(fr.Progress.Message) > maxProgressMessage || !utf8.ValidString(fr.Progress.Message) {
			return "a message over the bound or not UTF-8"
		}
		if fr.Progress.Total < 0 {
			return "a negative total"
		}
	case frameLane:
		if fr.Lane.Broke && (fr.Lane.OK || fr.Lane.Wrote < 0 || fr.Lane.Read < 0) {
			return "a break's report with ok or negative counts"
		}
	case frameReadData:
		if fr.ID == "" || fr.NetLen <= 0 || fr.NetLen > maxReadChunk {
			return "no read id, or a len out of bounds"
		}
	case frameReadEnd:
		if fr.ID == "" || fr.Size < 0 || len(fr.ReadErr) > 32 {
			return "no read id, a negative size or an errno over the bound"
		}
	case frameRPC:
		if fr.RPCID <= 0 {
			return "an RPC id that is not positive"
		}
		var payload map[string]any
		if !json.Valid(fr.Payload) || json.Unmarshal(fr.Payload, &payload) != nil || payload == nil {
			return "a payload that is not a JSON object"
		}
	case frameResult:
		if fr.ID == "" {
			return "no call id"
		}
		switch fr.Status {
		case statusOK, statusError, statusInterrupt, statusExit:
		default:
			return "a bad status"
		}
		if fr.Status != statusExit && fr.ExitCode != 0 {
			return "an exit code without status exit"
		}
		if fr.DurationMS < 0 || fr.DurationMS > maxDurationMS {
			return "a duration out of range"
		}
		if d := time.Duration(fr.DurationMS * float64(time.Millisecond)); d < 0 {
			return "a duration that overflows time.Duration"
		}
		if fr.Killed < 0 {
			return "a negative killed count"
		}
		for k, v := range fr.Dropped {
			if k != "stdout" && k != "stderr" && k != "images" && k != "files" || v < 0 || v > maxDroppedBytes {
				return "a bad dropped count"
			}
		}
		if len(fr.Files) > maxOutFiles {
			return "too many files"
		}
		seen := map[string]bool{}
		for _, f := range fr.Files {
			p := f.Path
			if len(p) > maxOutPath || !utf8.ValidString(p) || strings.ContainsRune(p, 0) ||
				path.Clean(p) != p || !strings.HasPrefix(p, OutDir+"/") || seen[p] {
				return "a file path that is not clean, under OutDir and distinct"
			}
			seen[p] = true
			if f.Size < 0 || f.Size > maxFileBytes {
				return "a bad file size"
			}
		}
	case frameImage:
		if fr.ID == "" {
			return "no call id"
		}
		if !imageTypes[fr.Image.MIME] || !IsImage(fr.Image.MIME, fr.Image.Data) {
			return "an image whose type is unknown or not its data's"
		}
	case frameFile:
		if fr.ID == "" {
			return "no call id"
		}
		if checkOutPath(fr.Path) != nil {
			return "a file path that is not clean and under OutDir"
		}
	case frameNetOpen, frameNetClose, frameNetData, frameNetAck:
		if fr.CID < 0 || fr.CID > maxEgressCID {
			return "a cid out of range"
		}
		if fr.T == frameNetData && (fr.NetLen <= 0 || fr.NetLen > egressChunk) {
			return "net_data of no bytes or over a chunk"
		}
		if fr.T == frameNetAck && (fr.NetN <= 0 || fr.NetN > egressDownWindow) {
			return "an ack out of range"
		}
		if fr.NetData != nil || fr.T != frameNetData && fr.NetLen != 0 || fr.T != frameNetAck && fr.NetN != 0 || fr.T != frameNetOpen && fr.Install {
			return "data, len or n on the wrong frame"
		}
	default:
		return "an unknown type"
	}
	return ""
}

func sameFrame(a, b frame) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// FuzzReadFrameLine reads arbitrary streams with arbitrary limits and
// reader buffer sizes, and compares with splitting the stream at '\n': a
// line within the limit comes back whole and on its own, a longer one or
// an unterminated last one is errProtocol, the clean end is io.EOF, and a
// line returned never exceeds the limit nor changes on the next read.
func FuzzReadFrameLine(f *testing.F) {
	frames := strings.Join(protocolFrames[:10], "\n") + "\n"
	f.Add([]byte(frames), 4096, 16)
	f.Add([]byte(frames), 100, 16)
	f.Add([]byte("short\nline\n"), 8, 16)
	f.Add([]byte("12345678\n123456789\n"), 8, 16)
	f.Add(bytes.Repeat([]byte("x"), 100), 16, 16)
	f.Add([]byte("no newline"), 64, 32)
	f.Add([]byte("\n\n\n"), 1, 16)
	f.Add([]byte(""), 1, 16)
	f.Fuzz(func(t *testing.T, data []byte, max, bufSize int) {
		if max < 0 || max > 1<<16 || bufSize < 0 || bufSize > 1<<12 {
			return
		}
		r := bufio.NewReaderSize(bytes.NewReader(data), bufSize)
		rest := data
		var prev, prevCopy []byte
		for {
			line, err := readFrameLine(r, max)
			if prev != nil && !bytes.Equal(prev, prevCopy) {
				t.Fatalf("a line changed after the next read: %q, was %q", prev, prevCopy)
			}
			i := bytes.IndexByte(rest, '\n')
			switch {
			case len(rest) == 0:
				if !errors.Is(err, io.EOF) || errors.Is(err, errProtocol) || line != nil {
					t.Fatalf("at the end: %q, %v; want io.EOF", line, err)
				}
				return
			case i < 0 || i > max:
				if !errors.Is(err, errProtocol) {
					t.Fatalf("want errProtocol for %q (limit %d), got %q, %v", rest, max, line, err)
				}
				return
			}
			if err != nil || !bytes.Equal(line, rest[:i]) {
				t.Fatalf("got %q, %v; want %q", line, err, rest[:i])
			}
			if len(line) > max {
				t.Fatalf("a %d-byte line under a %d-byte limit", len(line), max)
			}
			rest = rest[i+1:]
			prev, prevCopy = line, bytes.Clone(line)
		}
	})
}
