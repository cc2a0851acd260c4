//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readmeScreenshot makes TestConsoleInBrowser write the README's picture
// of the console (../.github/console.png) as well as its artifacts.
var readmeScreenshot = flag.Bool("readme-screenshot", false, "TestConsoleInBrowser: also write the README's screenshot, .github/console.png")

// consoleToken and clientToken are the two secrets of the browser test's
// bridge: the console's, typed into the sign-in form, and the MCP clients'.
const (
	consoleToken = "console-token-of-the-browser-test-0123456789"
	clientToken  = "client-token-of-the-browser-test-0123456789"
)

// hostileOutput is what the browser test's code prints: markup and script
// that the console must show as text. Run as HTML, it would add an element
// with the ID hostile-bold, open a dialog or change the page's title.
const hostileOutput = `<script>alert("pwned")</script><b id="hostile-bold">bold</b><img src=x onerror="document.title='pwned'">`

// artifactsDir is where integration tests keep what a person should look
// at after a run (screenshots): MCP_TEST_ARTIFACTS, else a directory of
// the system's temporary directory that outlives the run.
func artifactsDir(t testing.TB, name string) string {
	t.Helper()
	root := os.Getenv("MCP_TEST_ARTIFACTS")
	if root == "" {
		root = filepath.Join(os.TempDir(), "mcp-bridge-test-artifacts")
	}
	dir := filepath.Join(root, name)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A browser is a headless Chromium (Debian's, installed by
// scripts/provision) driven over the DevTools protocol by chromedp.
type browser struct {
	t      *testing.T
	ctx    context.Context
	shots  string // where screenshots go
	dialog atomic.Value
}

// newBrowser starts Chromium with a profile of its own; it is stopped at
// the end of the test. headers, when set, go with every request. A
// JavaScript dialog (alert, confirm) is recorded and dismissed: the
// console never opens one, hostile output might.
func newBrowser(t *testing.T, shots string, headers map[string]any) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("Chromium is not installed (scripts/provision installs Debian's chromium): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // as root: Chromium's own sandbox cannot run here
		chromedp.WindowSize(1280, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, shots: shots}
	// The first call starts the browser: on the browser's own context,
	// without a timeout (a timeout would end the browser with it).
	err = chromedp.Listen(ctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			b.dialog.Store(d.Message)
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
		}
	})
	if err != nil {
		t.Fatalf("starting Chromium (%s): %v", path, err)
	}
	b.run("enabling the network domain", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		if headers == nil {
			return nil
		}
		_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: headers})
		return err
	}))
	return b
}

// run runs actions within a minute, failing the test saying what for.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		b.t.Fatalf("%s: %v", what, err)
	}
}

// open navigates to url and returns the HTTP status of the page.
func (b *browser) open(url string) int64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(url))
	if err != nil {
		b.t.Fatalf("opening %s: %v", url, err)
	}
	return resp.Status
}

// evalJS returns what the JavaScript expression js evaluates to in the
// page of b.
func evalJS[T any](b *browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// text returns the text of the first element matching the CSS selector.
func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// click clicks the first element matching the CSS selector, as a mouse
// does (at its place on the page).
func (b *browser) click(what, sel string) {
	b.t.Helper()
	b.run(what, chromedp.Click(chromedp.CSS(sel)))
}

// waitJS waits, within timeout, until the expression js is true in the
// page, and fails the test naming what it waited for. An evaluation that
// fails (the page being replaced by a form's answer) is tried again.
func (b *browser) waitJS(what, js string, timeout time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		var ok bool
		ok, last = chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		cancel()
		if last == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
	b.t.Fatalf("waiting %v for %s (%s): last evaluation error %v\npage:\n%s", timeout, what, js, last, html)
}

// shot saves a screenshot of the whole page as NAME.png among the
// artifacts and returns its path ("" if it could not be taken).
func (b *browser) shot(name string) string {
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	b.t.Logf("screenshot: %s", path)
	return path
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

// noHostileMarkup fails the test if the page ran or rendered the hostile
// output as HTML: the element it would add, a dialog or a new title.
func (b *browser) noHostileMarkup(where string) {
	b.t.Helper()
	bold := evalJS[bool](b, `document.getElementById("hostile-bold") !== null || document.querySelector("pre.output img, pre.output script, td img") !== null`)
	title := evalJS[string](b, `document.title`)
	if bold || title == "pwned" {
		b.t.Fatalf("%s: the call's output was rendered as HTML (element: %v, title %q)", where, bold, title)
	}
	if d, _ := b.dialog.Load().(string); d != "" {
		b.t.Fatalf("%s: the page opened a dialog: %q", where, d)
	}
}

// TestConsoleInBrowser drives the operator's console in headless Chromium
// against a real bridge (serve -http) on one engine, with the npm
// server-everything behind a policy whose confirm rule names the console:
//   - without the token the page is the sign-in form; a wrong token and the
//     clients' token are refused there, with the reason on the page;
//   - signed in (name and token), the page follows the bridge live: a new
//     MCP session appears, a call's output arrives as it is printed,
//     hostile markup in it shows as text (live, and rendered by the
//     server after a reload), and a question waits with Approve/Decline;
//   - one call is approved and another declined by clicking the page's
//     buttons: the code goes on or gets the refusal, and the audit records
//     say "console" and the operator's name;
//   - a bearer token (set as a header by the browser) opens the page
//     read-only, without answer buttons.
//
// Screenshots go to MCP_TEST_ARTIFACTS/console (or the temporary
// directory's mcp-bridge-test-artifacts/console); -readme-screenshot
// writes the README's.
func TestConsoleInBrowser(t *testing.T) {
	e := connect(t, engineNames()[0])
	shots := artifactsDir(t, "console")
	home, _ := npmHome(t)
	writeFile(t, filepath.Join(home, "MCPs", "policy.json"),
		`{"servers": {"everything": {"confirm": ["get-sum"], "confirm_via": ["console"]}}}`)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	br := startHTTPBridge(t, e, httpOpts{env: []string{"HOME=" + home, "MCP_BRIDGE_POOL_SIZE=1",
		"MCP_BRIDGE_HTTP_TOKEN=" + clientToken, "MCP_BRIDGE_CONSOLE_TOKEN=" + consoleToken,
		"MCP_BRIDGE_AUDIT_LOG=" + auditPath, "MCP_BRIDGE_HTTP_REPLICA=replica-a"}})
	base := strings.TrimSuffix(br.url, "/mcp")

	// Without the token: the sign-in form, and nothing of the bridge.
	web := newBrowser(t, shots, nil)
	if status := web.open(base + "/console"); status != http.StatusOK {
		t.Fatalf("GET /console without a token ended with %d, want the sign-in page (200 after a redirect)", status)
	}
	web.waitJS("the sign-in form", `document.querySelector("form#signin") !== null && document.getElementById("sessions-body") === null`, 10*time.Second)
	web.shot("01-signin")
	signIn := func(name, token string) {
		web.run("signing in as "+name,
			chromedp.Clear(chromedp.CSS("#name")),
			chromedp.SendKeys(chromedp.CSS("#name"), name),
			chromedp.SendKeys(chromedp.CSS("#token"), token),
			chromedp.Click(chromedp.CSS("#signin-button")),
		)
	}
	for _, c := range []struct{ token, want string }{
		{"wrong-token-" + strings.Repeat("x", 32), "wrong console token"},
		{clientToken, "that is the clients' token (MCP_BRIDGE_HTTP_TOKEN)"},
	} {
		signIn("Ada", c.token)
		web.waitJS("the sign-in's refusal: "+c.want, `(document.getElementById("signin-error") || {textContent: ""}).textContent.includes(`+jsString(c.want)+`)`, 10*time.Second)
	}
	web.shot("02-signin-refused")

	// Signed in: the console, live.
	signIn("Ada", consoleToken)
	web.waitJS("the console, live", `document.body.id === "console" && document.body.dataset.stream === "live"`, 15*time.Second)
	if got := web.text("#replica-name"); got != "replica-a" {
		t.Errorf("the replica the page shows: %q", got)
	}
	jar, err := chromedp.Call(web.ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	cookies := jar.Cookies
	if len(cookies) != 1 || cookies[0].Name != "mcp_console" || !cookies[0].HTTPOnly || cookies[0].SameSite != network.CookieSameSiteStrict ||
		strings.Contains(cookies[0].Value, consoleToken) {
		t.Fatalf("cookies after signing in: %+v", cookies)
	}

	// A session appears.
	tr := &mcp.StreamableClientTransport{Endpoint: br.url, HTTPClient: br.httpClient(clientToken)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "browser-test", Version: "1"}, nil).Connect(ctx, tr, sessions2025)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if text, isErr := runPython(t, cs, map[string]any{"code": "x = 41\nprint('warm')"}); isErr || text != "warm" {
		t.Fatalf("first call: %q", text)
	}
	web.waitJS("the session's row", `document.querySelectorAll("tr[data-session]").length === 1`, 15*time.Second)
	// Its memory, as the engine reads it (Docker and Podman can).
	web.waitJS("the session's memory", `/^[0-9]+\.[0-9] MiB$/.test(document.querySelector("tr[data-session] td:nth-child(8)").textContent)`, 20*time.Second)

	// A call's output arrives while it runs, hostile markup as text, and
	// its question waits for an operator.
	call := func(code string) <-chan string {
		out := make(chan string, 1)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
				"servers": []string{"everything"}, "code": code, "timeout": 60}})
			switch {
			case err != nil:
				out <- "error: " + err.Error()
			default:
				out <- res.Content[0].(*mcp.TextContent).Text
			}
		}()
		return out
	}
	began := time.Now()
	first := call("print(r'''" + hostileOutput + "''')\nimport time\nprint('asking for approval', x + 1, 'at', repr(time.time()))\nprint(await mcp_everything.get_sum(a=40, b=2))")
	web.waitJS("the call's output", `Array.from(document.querySelectorAll("tr[data-call] pre.output")).some(p => p.textContent.includes("asking for approval 42"))`, 30*time.Second)
	seen := time.Now()
	// The sandbox's clock is the host's: the line's age when the page
	// showed it is the console's delay (the stream's wake, its push gap,
	// the browser).
	if m := regexp.MustCompile(`asking for approval 42 at ([0-9.]+)`).FindStringSubmatch(web.text("tr[data-call] pre.output")); m != nil {
		printed, _ := strconv.ParseFloat(m[1], 64)
		t.Logf("the call's output on the page %v after it was printed (%v after the call began)",
			seen.Sub(time.UnixMicro(int64(printed*1e6))).Round(time.Millisecond), seen.Sub(began).Round(time.Millisecond))
	}
	web.waitJS("the question", `document.querySelectorAll("tr[data-question] button.approve").length === 1`, 30*time.Second)
	output := evalJS[string](web, `document.querySelector("tr[data-call] pre.output").textContent`)
	if !strings.Contains(output, hostileOutput) {
		t.Fatalf("the call's output on the page: %q, want the hostile line as text", output)
	}
	if code := web.text("tr[data-call] code"); !strings.Contains(code, `<script>alert("pwned")`) {
		t.Fatalf("the call's code on the page: %q", code)
	}
	web.noHostileMarkup("live update")
	if got := web.text("tr[data-session] td:nth-child(3)"); got != e.Name() {
		t.Errorf("the session's engine on the page: %q, want %q", got, e.Name())
	}
	if got := web.text("tr[data-question] td:nth-child(6)"); got != "4" {
		t.Errorf("the question's line of code on the page: %q, want 4", got)
	}
	question := web.text("tr[data-question]")
	if !strings.Contains(question, "everything") || !strings.Contains(question, "get-sum") || !strings.Contains(question, `"a" = 40`) || !strings.Contains(question, `"b" = 2`) {
		t.Fatalf("the question on the page: %q (want server, tool and arguments)", question)
	}
	web.shot("03-question-live")
	if *readmeScreenshot {
		if path := web.shot("readme"); path != "" {
			data, err := os.ReadFile(path)
			if err == nil {
				err = os.WriteFile(filepath.Join("..", ".github", "console.png"), data, 0o644)
			}
			if err != nil {
				t.Errorf("the README's screenshot: %v", err)
			}
		}
	}
	// The same, rendered by the server.
	web.open(base + "/console")
	web.waitJS("the page again", `document.body.dataset.stream === "live" && document.querySelectorAll("tr[data-question]").length === 1`, 15*time.Second)
	output = evalJS[string](web, `document.querySelector("tr[data-call] pre.output").textContent`)
	if !strings.Contains(output, hostileOutput) {
		t.Fatalf("the call's output after a reload: %q", output)
	}
	web.noHostileMarkup("server-rendered page")

	// Approve from the page: the code goes on.
	web.click("approving", "tr[data-question] button.approve")
	select {
	case text := <-first:
		if !strings.HasSuffix(strings.TrimSpace(text), "The sum of 40 and 2 is 42.") {
			t.Fatalf("the approved call: %q", text)
		}
	case <-time.After(time.Minute):
		t.Fatal("the approved call did not end within a minute")
	}
	web.waitJS("the page after approving", `document.body.dataset.stream === "live" && document.querySelectorAll("tr[data-question]").length === 0 && document.querySelectorAll("tr[data-call]").length === 0`, 15*time.Second)

	// Decline from the page: the code gets the refusal.
	second := call("try:\n    await mcp_everything.get_sum(a=1, b=1)\nexcept MCPError as e:\n    print('refused:', e)")
	web.waitJS("the second question", `document.querySelectorAll("tr[data-question] button.decline").length === 1`, 30*time.Second)
	web.click("declining", "tr[data-question] button.decline")
	select {
	case text := <-second:
		if !strings.HasPrefix(text, `refused: refused by the tool policy: everything.get-sum was declined by the operator "Ada" on the console`) {
			t.Fatalf("the declined call: %q", text)
		}
	case <-time.After(time.Minute):
		t.Fatal("the declined call did not end within a minute")
	}
	web.waitJS("the audit records on the page", `Array.from(document.querySelectorAll("#audit-body tr")).filter(r => r.textContent.includes("console") && r.textContent.includes("Ada")).length >= 2`, 15*time.Second)
	web.run("filtering the audit records", chromedp.SendKeys(chromedp.CSS("#audit-filter"), "declined"))
	shown := evalJS[int](web, `Array.from(document.querySelectorAll("#audit-body tr")).filter(r => !r.classList.contains("hidden")).length`)
	if shown < 1 {
		t.Errorf("the audit filter %q leaves no row", "declined")
	}
	web.shot("04-answered")
	var got []string
	for _, rec := range readAudit(t, auditPath) {
		if rec["event"] == "tool_call" && rec["rule"] != nil {
			got = append(got, rec["outcome"].(string)+" "+rec["answered_via"].(string)+" "+rec["answered_by"].(string))
		}
	}
	if strings.Join(got, ", ") != "accepted console Ada, declined console Ada" {
		t.Errorf("audit records of the answers: %q", got)
	}
	web.noHostileMarkup("after the answers")

	// A bearer token opens the page read-only: no answer buttons.
	third := call("await mcp_everything.get_sum(a=2, b=2)")
	reader := newBrowser(t, shots, map[string]any{"Authorization": "Bearer " + consoleToken})
	if status := reader.open(base + "/console"); status != http.StatusOK {
		t.Fatalf("GET /console with the bearer token: %d", status)
	}
	reader.waitJS("the read-only page", `document.body.dataset.stream === "live" && document.querySelectorAll("tr[data-question]").length === 1`, 30*time.Second)
	buttons := evalJS[int](reader, `document.querySelectorAll("button.approve, button.decline").length`)
	if buttons != 0 {
		t.Errorf("the bearer's page has %d answer buttons; it cannot send the CSRF token of a sign-in", buttons)
	}
	reader.shot("05-bearer-read-only")
	web.click("approving the third", "tr[data-question] button.approve")
	<-third
}
