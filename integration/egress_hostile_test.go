//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// egressProbeCode is run in a sandbox by TestEgressHostile: raw requests
// to its proxy endpoint that the gateway must refuse, a redirect, a
// stalled server, and what the sandbox itself can reach; it prints a JSON
// object. %[1]s is the allowed host:port, %[2]s its port.
const egressProbeCode = `import json, os, socket, time, urllib.request, urllib.error
proxy = os.environ["HTTP_PROXY"].rsplit(":", 1)
addr = (proxy[0].split("//")[1], int(proxy[1]))
H, P = %[1]q, %[2]q
out = {}
def raw(req):
    s = socket.create_connection(addr, timeout=20)
    try:
        s.sendall(req)
        data = b""
        while b"\r\n" not in data:
            c = s.recv(4096)
            if not c:
                break
            data += c
    finally:
        s.close()
    return data.split(b"\r\n")[0].decode("latin-1")
def get(path, whole=False):
    try:
        r = urllib.request.urlopen("http://" + H + path, timeout=30)
        if whole:  # read(amt) takes a short body silently; read() does not
            return "read %%d" %% len(r.read())
        n = 0
        while True:
            c = r.read(1 << 20)
            if not c:
                break
            n += len(c)
        return "read %%d" %% n
    except urllib.error.HTTPError as e:
        return "HTTPError %%d %%s" %% (e.code, e.reason)
    except Exception as e:
        return "%%s: %%s" %% (type(e).__name__, e)
out["port"] = raw(b"CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
out["host"] = raw(("GET http://%%s/ HTTP/1.1\r\nHost: other.example.test\r\n\r\n" %% H).encode())
for name, spelling in (("numeric", "2130706433"), ("hex", "0x7f.1"), ("mapped", "[::ffff:127.0.0.1]"), ("v6", "[::1]")):
    out[name] = raw(("GET http://%%s:%%s/ HTTP/1.1\r\nHost: %%s:%%s\r\n\r\n" %% (spelling, P, spelling, P)).encode())
out["head"] = raw(("GET http://%%s/ HTTP/1.1\r\nHost: %%s\r\nX-Big: %%s\r\n\r\n" %% (H, H, "a" * 70000)).encode())
out["redirect"] = get("/redirect")
t = time.monotonic()
out["slow"] = get("/slow", whole=True)
out["slow_seconds"] = time.monotonic() - t
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    out["raw"] = "created"
except OSError as e:
    out["raw"] = type(e).__name__
out["interfaces"] = [n for _, n in socket.if_nameindex()]
try:
    out["routes"] = len(open("/proc/net/route").read().splitlines()[1:])
except OSError:
    out["routes"] = 0
keys = [k for k, v in os.environ.items() if "PRIVATE KEY" in v]
for top in ("/tmp", "/workspace", "/home", "/run", "/var", "/dev/shm"):
    for root, _, files in os.walk(top):
        for f in files:
            try:
                with open(os.path.join(root, f), "rb") as fh:
                    if b"PRIVATE KEY" in fh.read(1 << 20):
                        keys.append(os.path.join(root, f))
            except OSError:
                pass
out["keys"] = keys
print(json.dumps(out))`

// TestEgressHostile runs the hostile list through the real
// gateway on every engine: a CONNECT to a port not allowed, a Host that is
// not the target, numeric and IPv6 spellings of loopback, an oversized
// head, a redirect to a host not allowed, a server that stalls (cut at
// idle_timeout), a 1 GiB download of known length (refused before its
// body) and one of unknown length (cut at max_bytes_per_call, the result
// saying so), 1,000 connections at once (max_connections holds, none is
// left unanswered past the README's bound, calls are answered as usual),
// and the sandbox itself: no raw sockets, no interface but loopback and
// no route (a DNS query has nothing to carry it; the test does not send
// one), and no private key anywhere code can write or the runtime writes. Names are never used: everything about
// resolution is the egress package's unit tests, with a fake resolver.
func TestEgressHostile(t *testing.T) {
	t.Parallel()
	forEach(t, withGVisor(engineVariants()), func(t *testing.T, v variant) { checkEgressHostile(t, v.engine, v.env()...) })
}

// egressAnswerBound is the bound README.md states on a connection to the
// proxy endpoint: answered or closed within 10 s of reaching it (the
// gateway's wait for a request's head). egressAnswerSlack is what a
// loaded machine may add to it, frames crossing late: the flood of
// TestEgressHostile counts a connection answered later as silent.
const (
	egressAnswerBound = 10 * time.Second
	egressAnswerSlack = 20 * time.Second
)

// hostileServer is the loopback HTTP server of TestEgressHostile.
func hostileServer(t *testing.T) *httptest.Server {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 1<<20)
		switch r.URL.Path {
		case "/redirect":
			_, port, _ := strings.Cut(r.Host, ":")
			http.Redirect(w, r, "http://127.0.0.2:"+port+"/", http.StatusFound)
		case "/slow":
			w.Header().Set("Content-Length", "10")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/huge-sized":
			w.Header().Set("Content-Length", fmt.Sprint(1<<30))
			fallthrough
		case "/huge":
			for range 1 << 10 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		default:
			fmt.Fprint(w, "ok")
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv
}

// checkEgressHostile is TestEgressHostile on the engine called name, with
// env added to the bridge's.
func checkEgressHostile(t *testing.T, name string, env ...string) {
	srv := hostileServer(t)
	hp := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := strings.Cut(hp, ":")
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.json")
	writeFile(t, policy, fmt.Sprintf(`{"network": {"allow": [%q], "max_connections": 16, "max_bytes_per_call": 33554432, "idle_timeout": 2}}`, hp))
	auditLog := filepath.Join(dir, "audit.jsonl")
	cs := connectBridge(t, name, append([]string{"MCP_BRIDGE_POLICY=" + policy, "MCP_BRIDGE_AUDIT_LOG=" + auditLog}, env...)...)

	text, isErr := runPython(t, cs, map[string]any{"code": fmt.Sprintf(egressProbeCode, hp, port), "timeout": 90})
	var got struct {
		Port, Host, Numeric, Hex, Mapped, V6, Head, Redirect, Slow, Raw string
		SlowSeconds                                                     float64 `json:"slow_seconds"`
		Interfaces, Keys                                                []string
		Routes                                                          int
	}
	if err := json.Unmarshal([]byte(text), &got); isErr || err != nil {
		t.Fatalf("the probe: %v\n%s", err, text)
	}
	for _, c := range []struct{ what, got, want string }{
		{"CONNECT to a port not allowed", got.Port, "HTTP/1.1 403 127.0.0.1:1"},
		{"a Host that is not the target", got.Host, "other.example.test"},
		{"2130706433", got.Numeric, "HTTP/1.1 403 2130706433:" + port},
		{"0x7f.1", got.Hex, "HTTP/1.1 403 0x7f.1:" + port},
		{"[::ffff:127.0.0.1]", got.Mapped, "HTTP/1.1 403 [::ffff:127.0.0.1]:" + port},
		{"[::1]", got.V6, "HTTP/1.1 403 [::1]:" + port},
		{"an oversized head", got.Head, "HTTP/1.1 431 "},
		{"a redirect to a host not allowed", got.Redirect, "HTTPError 403 127.0.0.2:" + port},
		{"a stalled server", got.Slow, "IncompleteRead"},
		{"a raw socket", got.Raw, "PermissionError"},
	} {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("%s: %q, want it to contain %q", c.what, c.got, c.want)
		}
	}
	if strings.Contains(got.Host, "HTTP/1.1 2") {
		t.Errorf("a Host that is not the target was let through: %q", got.Host)
	}
	if got.SlowSeconds > 20 {
		t.Errorf("the stalled server held the request %.1f s (idle_timeout 2 s)", got.SlowSeconds)
	}
	if !slices.Equal(got.Interfaces, []string{"lo"}) || got.Routes != 0 {
		t.Errorf("the sandbox has interfaces %q and %d routes; want only lo and none", got.Interfaces, got.Routes)
	}
	if len(got.Keys) != 0 {
		t.Errorf("private keys in the sandbox: %q", got.Keys)
	}

	download := func(path string) (string, bool) {
		return runPython(t, cs, map[string]any{"code": fmt.Sprintf(`import urllib.request, urllib.error
try:
    r = urllib.request.urlopen("http://%s%s", timeout=60)
    n = 0
    while True:
        c = r.read(1 << 20)
        if not c:
            break
        n += len(c)
    print("read", n)
except urllib.error.HTTPError as e:
    print("HTTPError", e.code, e.reason)
except Exception as e:
    print(type(e).__name__, e)`, hp, path), "timeout": 90})
	}
	// 1 GiB of known length: refused before its body, with a 403 saying
	// why; and the call's result says so too.
	text, _ = download("/huge-sized")
	for _, want := range []string{"HTTPError 403 " + hp + ": the response of 1073741824 bytes is over the ", "max_bytes_per_call (33554432)",
		"notice: egress: the connection to " + hp + " was refused: its response of 1073741824 bytes"} {
		if !strings.Contains(text, want) {
			t.Errorf("a 1 GiB download of known length: the result lacks %q:\n%s", want, text)
		}
	}
	// 1 GiB of unknown length: cut at the bound, and the result says so.
	text, _ = download("/huge")
	if !strings.Contains(text, "notice: egress: the connection to "+hp+" was cut: the call's bytes through the gateway passed max_bytes_per_call (33554432)") ||
		strings.Contains(text, "read 1073741824") {
		t.Errorf("a 1 GiB download of unknown length:\n%s", text)
	}
	// The next call has its own budget.
	if text, _ := download("/"); !strings.HasPrefix(text, "read 2") || strings.Contains(text, "notice") {
		t.Errorf("a small download after the cut: %q", text)
	}

	// 1,000 connections at once, held open across calls.
	flood := fmt.Sprintf(`import os, selectors, socket, time
proxy = os.environ["HTTP_PROXY"].rsplit(":", 1)
addr = (proxy[0].split("//")[1], int(proxy[1]))
sel = selectors.DefaultSelector()  # before the flood takes every descriptor
flood, failed = [], 0
for i in range(1000):
    try:
        flood.append(socket.create_connection(addr, timeout=10))
    except OSError:
        failed += 1
count = {"refused": 0, "closed": 0, "held": 0, "silent": 0, "other": 0}
# Each connection's first answer, as it comes: refused (429), closed (by
# the runtime: past its bound, or with every descriptor taken), held (by
# the gateway, waiting for a request: its 400 once it stopped waiting,
# 10 s after it took the connection), or silent when nothing came within
# the bound the README states (%[1]d s) and a loaded machine's slack
# (%[2]d s) once all were opened.
held_at, last = [], 0.0
for s in flood:
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
opened = time.monotonic()
left, deadline = len(flood), opened + %[1]d + %[2]d
while left and time.monotonic() < deadline:
    for key, _ in sel.select(max(0.01, deadline - time.monotonic())):
        sel.unregister(key.fileobj)
        left -= 1
        last = time.monotonic() - opened
        try:
            first = key.fileobj.recv(64)
        except OSError:
            first = b""
        if first.startswith(b"HTTP/1.1 429"):
            count["refused"] += 1
        elif first.startswith(b"HTTP/1.1 400"):
            count["held"] += 1
            held_at.append(time.monotonic())
        else:
            count["closed" if not first else "other"] += 1
count["silent"] = left
# A place frees when a held connection's 400 comes, and a connection read
# later may take it: the bound is on connections held at once, each over
# the 10 s before its 400 (9 s here: its answer may be read late).
most = max([sum(1 for b in held_at if a <= b <= a + 9) for a in held_at] or [0])
refused, closed, held, silent = count["refused"], count["closed"], count["held"], count["silent"]
print(len(flood), failed, refused, closed, held, silent, most, "%%.1f" %% last)`, int(egressAnswerBound/time.Second), int(egressAnswerSlack/time.Second))
	text, isErr = runPython(t, cs, map[string]any{"code": flood, "timeout": 100})
	var opened, failed, refused, closed, held, silent, most int
	var last float64
	if _, err := fmt.Sscan(text, &opened, &failed, &refused, &closed, &held, &silent, &most, &last); isErr || err != nil || opened+failed != 1000 || refused == 0 {
		t.Fatalf("the flood: %q (%v)", text, err)
	}
	if most < 1 || most > 16 || silent > 0 || refused+closed+held != opened {
		t.Errorf("the flood: at most %d connections held by the gateway at once (max_connections 16; %d in all), %d refused, %d closed, %d silent %v after all were opened, of %d opened",
			most, held, refused, closed, silent, egressAnswerBound+egressAnswerSlack, opened)
	}
	start := time.Now()
	if text, isErr := runPython(t, cs, map[string]any{"code": "print(6 * 7)"}); isErr || text != "42" {
		t.Fatalf("a call while 1,000 connections are held: %q", text)
	}
	t.Logf("%s: a call while the flood is held took %v (%d connections opened: %d held, at most %d at once, %d refused with 429, %d closed; the last answered %.1f s after all were opened)",
		name, time.Since(start), opened, held, most, refused, closed, last)
	if text, _ := runPython(t, cs, map[string]any{"code": "for s in flood: s.close()\nprint('closed')"}); text != "closed" {
		t.Fatalf("closing the flood: %q", text)
	}

	// Refusals of one session, target and reason within a second are
	// merged into one record with their count (#47): the counts add up to
	// every refusal, in far fewer records.
	records := readAudit(t, auditLog)
	denied, deniedRecords := 0, 0
	for _, r := range records {
		if r["event"] == "egress" && r["outcome"] == "denied" {
			n, ok := r["count"].(float64)
			if !ok || n < 1 {
				t.Errorf("a denied egress record without a count: %v", r)
				n = 1
			}
			denied += int(n)
			deniedRecords++
		}
	}
	if denied < 8+refused {
		t.Errorf("%d denied egress connections counted in the audit log; want at least the probe's 8 and the flood's %d", denied, refused)
	}
	if deniedRecords >= denied && refused > 100 {
		t.Errorf("%d denied egress records for %d refusals: the flood's were not merged", deniedRecords, denied)
	}
	t.Logf("%d denied egress connections in %d audit records", denied, deniedRecords)
}
