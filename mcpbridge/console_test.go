package mcpbridge

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
)

const (
	testConsoleToken = "console-token-0123456789abcdef0123456789"
	testClientToken  = "clients-token-0123456789abcdef"
)

// consoleGet sends GET path to hb with headers and returns the response
// and its body.
func consoleGet(t *testing.T, hb *fixture, path string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, hb.srv.URL+path, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	hc := *hb.srv.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

// TestConsoleOff: without a console token /console is 404, and a console
// token equal to the clients' is refused at start.
func TestConsoleOff(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{}, HTTPOptions{Token: testClientToken}, false)
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer " + testClientToken}} {
		if resp, _ := consoleGet(t, hb, console.Path, h); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s with %v: %d, want 404", console.Path, h, resp.StatusCode)
		}
	}
	err := CheckListen("127.0.0.1:0", &HTTPOptions{Token: testConsoleToken, ConsoleToken: testConsoleToken})
	if !errors.Is(err, console.ErrSameToken) {
		t.Errorf("CheckListen with the same tokens: %v, want ErrSameToken", err)
	}
}

// TestConsoleShowsCalls: the console of a bridge serving a client shows
// its session and a call's hostile output as it comes, as text in the
// page and as JSON strings in the events; the clients' token and a
// foreign Host do not open it.
func TestConsoleShowsCalls(t *testing.T) {
	t.Parallel()
	hb := newFixture(t, fixtureOptions{Engine: newTrackingEngine(t), Audit: true, HTTP: &HTTPOptions{Token: testClientToken, ConsoleToken: testConsoleToken}})
	bearer := map[string]string{"Authorization": "Bearer " + testConsoleToken}
	if resp, _ := consoleGet(t, hb, console.Path, map[string]string{"Authorization": "Bearer " + testClientToken}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the clients' token: %d, want 401", resp.StatusCode)
	}
	if resp, _ := consoleGet(t, hb, console.Path, map[string]string{"Authorization": "Bearer " + testConsoleToken, "Origin": "https://evil.example"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Origin: %d, want 403", resp.StatusCode)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hb.srv.URL+"/console/events", nil)
	req.Header.Set("Authorization", "Bearer "+testConsoleToken)
	resp, err := hb.srv.Client().Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %v %v", resp, err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	waitData := func(want string) string {
		t.Helper()
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, "data: ") && strings.Contains(l, want) {
				return l
			}
		}
		t.Fatalf("the stream ended without %q", want)
		return ""
	}
	waitData(`"sessions":[]`)

	cs, err := hb.connect(t, testClientToken)
	if err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(t.TempDir(), "release")
	code := "import os, time\nprint('<script>alert(1)</script><b>bold</b>', flush=True)\n" +
		"while not os.path.exists(" + pyQuote(release) + "):\n    time.sleep(0.01)\nprint('done')"
	done := make(chan string, 1)
	go func() { text, _ := callText(t, cs, code); done <- text }()
	data := waitData(`\u003cscript\u003ealert(1)\u003c/script\u003e\u003cb\u003ebold`)
	if strings.Contains(data, "<script>") || !strings.Contains(data, `"name":"session-`) || !strings.Contains(data, `"busy":true`) {
		t.Errorf("the event: %s", data)
	}
	_, page := consoleGet(t, hb, console.Path, bearer)
	if strings.Contains(page, "<script>alert") || !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;bold") {
		t.Errorf("the page does not show the output as text: %s", page)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if text := <-done; !strings.HasSuffix(text, "done") {
		t.Fatalf("the call: %q", text)
	}
	waitData(`"calls":[]`)
	// Its audit record follows.
	waitData(`"event":"run_python","session":"session-`)
}

// pyQuote quotes s as a Python string literal.
func pyQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
