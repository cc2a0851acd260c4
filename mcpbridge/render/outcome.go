// Package render turns the outcome of a run_python call into its MCP
// result, as the original bridge renders it: the text (compact, or the
// payload in TOON) and the structured payload, the output cut to its
// budget with the whole kept for resources/read (budget.go), and the
// call's rich results: images and the files it wrote out (files.go).
// It holds no state of the bridge: the bridge hands it a session's
// result, the stores of its session and how to open a sandbox's files.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/moonrhythm/toon"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// Statuses of a run_python result.
const (
	statusSuccess    = "success"
	statusValidation = "validation_error"
	statusTimeout    = "timeout"
	statusError      = "error"
)

// A payload is the structured result of run_python, trimmed as the
// original bridge trims it: only non-empty fields, status and summary only
// where they tell something.
type payload struct {
	Status         string   `json:"status,omitempty"`
	Summary        string   `json:"summary,omitempty"`
	ExitCode       int      `json:"exitCode,omitempty"`
	Servers        []string `json:"servers,omitempty"`
	Stdout         []string `json:"stdout,omitempty"`
	Stderr         []string `json:"stderr,omitempty"`
	Error          string   `json:"error,omitempty"`
	TimeoutSeconds int      `json:"timeoutSeconds,omitempty"`
	Notice         string   `json:"notice,omitempty"`
	// FullOutput is the URI of the whole output when stdout and stderr
	// were cut to the output budget.
	FullOutput string `json:"fullOutput,omitempty"`
	// Images counts the images in the content; Files lists the files out
	// (/workspace/out) of the call; Notes say what was left out.
	Images int           `json:"images,omitempty"`
	Files  []payloadFile `json:"files,omitempty"`
	Notes  []string      `json:"notes,omitempty"`
	// Session is the handle of the sandbox the call started, in the
	// result that mints it (protocol 2026-07-28 over HTTP).
	Session string `json:"session,omitempty"`
	// Forks are the handles of the sandboxes the call forked its own
	// into (run_python's fork), one each.
	Forks []string `json:"forks,omitempty"`
}

// An Outcome is everything a run_python result is rendered from.
type Outcome struct {
	status   string
	summary  string
	exitCode int
	servers  []string
	stdout   string
	stderr   string
	err      string
	timeout  int // seconds, for timeouts
	notice   string
	output   string // the URI of the whole output, when cut to the budget
	rich     Rich
}

// Invalid is the outcome of a call whose arguments were refused.
func Invalid(msg string) Outcome {
	return Outcome{status: statusValidation, summary: msg, err: msg}
}

// NotRun is the outcome of a call that did not run, for problem.
func NotRun(problem string) Outcome {
	return Outcome{status: statusError, summary: "Not run: " + problem, err: problem}
}

// Failed is the outcome of a call whose sandbox could not be had.
func Failed(err error) Outcome {
	return Outcome{status: statusError, summary: "Sandbox error: " + err.Error(), err: err.Error()}
}

// LoadFailed is the outcome of a call whose servers could not be loaded.
func LoadFailed(err error, servers []string) Outcome {
	return Outcome{status: statusError, summary: "Loading MCP servers failed: " + err.Error(), err: err.Error(), servers: servers}
}

// FromSession turns a session's Result (and error) into an outcome.
func FromSession(res *entrypoint.Result, err error, servers []string, timeoutSec int) Outcome {
	o := Outcome{servers: servers}
	if res != nil {
		o.stdout, o.stderr, o.notice = res.Stdout, res.Stderr, res.Notice
	}
	switch {
	case err != nil:
		o.status, o.exitCode = statusError, 1
		o.summary = "Sandbox error: " + err.Error()
		o.err = err.Error()
	case res.Status == entrypoint.StatusSuccess, res.Status == entrypoint.StatusExit && res.ExitCode == 0:
		o.status = statusSuccess
		o.summary = "Success"
		if res.Stdout == "" && res.Stderr == "" && len(res.Images) == 0 && len(res.Files) == 0 {
			o.summary = "Success (no output)"
		}
	case res.Status == entrypoint.StatusExit:
		o.status, o.exitCode = statusError, res.ExitCode
		o.summary = fmt.Sprintf("Sandbox exited with code %d", res.ExitCode)
		o.err = o.summary
	case res.Status == entrypoint.StatusTimeout:
		o.status, o.timeout = statusTimeout, timeoutSec
		o.summary = fmt.Sprintf("Timeout: execution exceeded %ds", timeoutSec)
		o.err = fmt.Sprintf("Execution timed out after %ds", timeoutSec)
	default: // an exception in the user's code
		o.status, o.exitCode = statusError, 1
		o.stderr += res.Traceback
		o.summary = "Python raised " + res.ExceptionType
		o.err = res.ExceptionType
		if res.ExceptionMessage != "" {
			o.err += ": " + res.ExceptionMessage
		}
	}
	return o
}

// AddNotice appends note ("": none) to the outcome's notice.
func (o *Outcome) AddNotice(note string) {
	if note != "" {
		o.notice = strings.TrimPrefix(o.notice+"; "+note, "; ")
	}
}

// SetRich sets what the call returns besides its text.
func (o *Outcome) SetRich(r Rich) { o.rich = r }

// payload trims the outcome into the structured result.
func (o Outcome) payload() payload {
	p := payload{
		Servers:        o.servers,
		Stdout:         splitLines(o.stdout),
		Stderr:         splitLines(o.stderr),
		Error:          o.err,
		TimeoutSeconds: o.timeout,
		ExitCode:       o.exitCode,
		Notice:         o.notice,
		FullOutput:     o.output,
		Files:          o.rich.files,
		Notes:          o.rich.notes,
	}
	for _, c := range o.rich.content {
		if _, ok := c.(*mcp.ImageContent); ok {
			p.Images++
		}
	}
	if o.status != statusSuccess {
		p.Status = o.status
	}
	if o.status != statusSuccess || o.stdout == "" {
		p.Summary = o.summary
	}
	return p
}

// compactText renders the default text: the stdout lines, a stderr block,
// the summary when nothing was printed, then status lines when not
// successful.
func (o Outcome) compactText() string {
	var b strings.Builder
	line := func(s string) {
		b.WriteString(strings.TrimRight(s, "\n"))
		b.WriteByte('\n')
	}
	if o.stdout != "" {
		line(o.stdout)
	}
	if o.stderr != "" {
		line("stderr:\n" + o.stderr)
	}
	if o.stdout == "" && o.stderr == "" {
		line(o.summary)
	}
	if len(o.rich.files) > 0 {
		names := make([]string, len(o.rich.files))
		for i, f := range o.rich.files {
			names[i] = strings.TrimPrefix(f.Path, entrypoint.OutDir+"/") + " (" + engine.FormatBytes(f.Size) + ", " + f.As + ")"
		}
		line("files out: " + strings.Join(names, ", "))
	}
	for _, n := range o.rich.notes {
		line(n)
	}
	if o.status != statusSuccess {
		line("status: " + o.status)
		if o.exitCode != 0 {
			line(fmt.Sprintf("exit: %d", o.exitCode))
		}
		if o.err != "" && o.err != o.summary {
			line("error: " + o.err)
		}
	}
	if o.notice != "" {
		line("notice: " + o.notice)
	}
	return strings.TrimRight(b.String(), "\n")
}

// Result builds the MCP result in the given output mode (Compact or
// TOON): in toon mode, as in the original, the text renders the
// structured content, the full payload (toonPayload).
func (o Outcome) Result(mode string) *mcp.CallToolResult {
	text, structured := o.compactText(), any(o.payload())
	if mode == TOON {
		p := o.toonPayload()
		text, structured = toonText(p), p
	}
	content := append([]mcp.Content{&mcp.TextContent{Text: text}}, o.rich.content...)
	if o.output != "" {
		content = append(content, &mcp.ResourceLink{URI: o.output, Name: "output",
			Title: "The whole output of this call", MIMEType: "text/plain"})
	}
	return &mcp.CallToolResult{
		Content:           content,
		StructuredContent: structured,
		IsError:           o.status != statusSuccess,
	}
}

// splitLines splits output into lines without their newlines.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// Output modes of the tool's text content.
const (
	Compact = "compact"
	TOON    = "toon"
)

// Status returns the status a run_python result carries: success,
// validation_error, timeout or error.
func Status(res *mcp.CallToolResult) string {
	if res == nil {
		return statusError
	}
	if p, ok := res.StructuredContent.(payload); ok && p.Status != "" {
		return p.Status
	}
	if res.IsError {
		return statusError
	}
	return statusSuccess
}

// SetSession makes the structured content of res, a run_python result,
// carry the session handle h.
func SetSession(res *mcp.CallToolResult, h string) {
	editPayload(res, func(p *payload) { p.Session = h })
}

// editPayload applies edit to the payload of res's structured content.
func editPayload(res *mcp.CallToolResult, edit func(*payload)) {
	switch p := res.StructuredContent.(type) {
	case payload:
		edit(&p)
		res.StructuredContent = p
	case toonPayload:
		edit(&p.payload)
		res.StructuredContent = p
	}
}

// SetForks records in res the handles of the forks its call made, in
// its structured content and one line of text before the rest.
func SetForks(res *mcp.CallToolResult, handles []string) {
	editPayload(res, func(p *payload) { p.Forks = handles })
	line := "forks: " + strings.Join(handles, " ") + ` (pass one as "session" to continue in that copy of this sandbox)`
	if len(res.Content) > 0 {
		if t, ok := res.Content[0].(*mcp.TextContent); ok {
			t.Text = line + "\n" + t.Text
			return
		}
	}
	res.Content = append([]mcp.Content{&mcp.TextContent{Text: line}}, res.Content...)
}

// The text of MCP_BRIDGE_OUTPUT_MODE=toon: the result's payload in TOON
// (Token-Oriented Object Notation, https://github.com/toon-format/spec) in
// a fenced block, as the original renders it with its TOON encoder
// (toon_format's encode). The encoder is github.com/moonrhythm/toon, the
// Go encoder that conforms to the spec (v3.3, whose official encoder
// fixtures it passes) among those on the Go module proxy: it keeps the
// payload's key order (its JSON field order), renders stdout and stderr
// as inline arrays and the files out as a table, quotes by the spec's
// rules, and folds no keys. It predates spec v4.0, which adds that a
// string beginning with "#" is quoted: such a string (a printed comment)
// stays unquoted here, which a v4 decoder still reads as the same string
// in every place this payload puts one (a value after "key: ", an element
// of an inline array); the one place v4 reads a line beginning with "#"
// as a comment, a table row's first cell, holds a file's path, which
// begins with /workspace/out.

// A toonPayload is the payload the original renders in toon mode, as
// text and as structured content alike: status and summary always, the
// exit code of a success (0) too, then the rest of payload in its order.
type toonPayload struct {
	Status   string `json:"status"`
	Summary  string `json:"summary"`
	ExitCode *int   `json:"exitCode,omitempty"`
	// payload's own status, summary and exitCode are hidden by the
	// fields above (encoding/json takes the shallower of two fields of
	// one name).
	payload
}

// toonPayload returns the outcome's payload for toon mode.
func (o Outcome) toonPayload() toonPayload {
	p := toonPayload{Status: o.status, Summary: o.summary, payload: o.payload()}
	if o.exitCode != 0 || o.status == statusSuccess {
		code := o.exitCode
		p.ExitCode = &code
	}
	return p
}

// toonText renders p as a fenced TOON block. Should the encoder fail, it
// is a fenced JSON block, indented by two spaces with its keys sorted,
// which is also what the original falls back to when its encoder is
// missing or fails.
func toonText(p toonPayload) string {
	body, err := toon.Marshal(p)
	if err != nil {
		return jsonBlock(p)
	}
	if text := strings.TrimRight(string(body), "\n"); text != "" {
		return "```toon\n" + text + "\n```"
	}
	return "```toon\n```"
}

// jsonBlock renders v as a fenced JSON block, indented by two spaces with
// its keys sorted, and, like Python's json.dumps, <, > and & as they are.
func jsonBlock(v any) string {
	var sorted any
	data, err := json.Marshal(v)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		err = dec.Decode(&sorted)
	}
	if err != nil {
		sorted = map[string]string{"error": err.Error()}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(sorted)
	return "```json\n" + strings.TrimRight(b.String(), "\n") + "\n```"
}
