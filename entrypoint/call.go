package entrypoint

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// A Status is how a call ended.
type Status string

// Call statuses.
const (
	// StatusSuccess: the code ran to its end.
	StatusSuccess Status = "success"
	// StatusError: an exception escaped the code, or the sandbox failed.
	StatusError Status = "error"
	// StatusTimeout: the code ran past its timeout and was stopped.
	StatusTimeout Status = "timeout"
	// StatusExit: the code raised SystemExit (sys.exit).
	StatusExit Status = "exit"
)

// A Call is code to run in a session, and what its caller hears while it
// runs.
type Call struct {
	// Code is the Python source. Top-level await works.
	Code string
	// Timeout stops the code after this long. Zero: no limit.
	Timeout time.Duration
	// OnOutput, when set, receives each piece of the call's output as it
	// arrives (within the cap), stream "stdout" or "stderr". It runs on
	// the session's reader and must not block. Zero: the output is only
	// returned in the Result.
	OnOutput func(stream, data string)
	// OnProgress, when set, receives the code's runtime.report_progress
	// reports (at most about 20 a second); the sandbox sends none when it
	// is nil. It runs on the session's reader and must not block.
	OnProgress func(Progress)
}

// A Progress is the code's report of how far it is.
type Progress struct {
	// Progress is how far the code is, in units of its choosing.
	Progress float64
	// Total is the Progress at which it is done; 0 when unknown.
	Total float64
	// Message says what it is doing; at most 4 KiB.
	Message string
}

// A Result is the outcome of one call.
type Result struct {
	Status Status
	Stdout string
	Stderr string
	// Truncated reports that output beyond the cap was dropped; the text
	// then ends with a marker saying how much.
	Truncated bool
	// ExitCode is the SystemExit code, for StatusExit.
	ExitCode int
	// ExceptionType, ExceptionMessage and Traceback describe the
	// exception, for StatusError and StatusTimeout.
	ExceptionType    string
	ExceptionMessage string
	Traceback        string
	// Duration is the call's run time as the sandbox measured it (or the
	// host's wait, when the sandbox did not answer).
	Duration time.Duration
	// StateLost reports that this call did not run in the interpreter of
	// the previous calls, or that its own interpreter is gone, and Notice
	// says why.
	StateLost bool
	Notice    string
	// Images are the images the code showed (display, matplotlib), in
	// order, within Options.MaxImages and MaxImageBytes.
	Images []Image
	// Files are the files under OutDir the call created or changed, read
	// with Session.OpenFile(ctx, SandboxID, …).
	Files []OutFile
	// Notes tell what was left out of the result: images over the limits,
	// files past the first 100.
	Notes []string
	// SandboxID is the engine's ID of the container the call ran in.
	SandboxID string

	// began reports that the sandbox said the code was about to run.
	began bool
}

// A callState collects one call's output and awaits its result.
type callState struct {
	id string
	// ctx ends with the call: RPCs it made that are still in flight are
	// cancelled (a proxied server that hangs does not outlive the call).
	ctx            context.Context
	cancel         context.CancelFunc
	stdout, stderr capBuffer
	result         chan frame
	onOutput       func(stream, data string)
	onProgress     func(Progress)
	images         imageBox
	inline         inlineFiles
	// started is set when the sandbox said the code is about to run;
	// until then none of it ran.
	started atomic.Bool
}

// output keeps what fits of data, a piece of the call's stream, and
// passes that on to onOutput.
func (c *callState) output(stream, data string) {
	buf := &c.stderr
	if stream == "stdout" {
		buf = &c.stdout
	}
	if kept := buf.write(data); kept != "" && c.onOutput != nil {
		c.onOutput(stream, kept)
	}
}

// A capBuffer keeps at most max bytes of text (0: no limit) and counts the
// rest.
type capBuffer struct {
	max     int
	b       strings.Builder
	dropped int64
}

// write appends what fits of s and returns that part.
func (c *capBuffer) write(s string) string {
	if c.max > 0 && c.b.Len()+len(s) > c.max {
		cut := c.max - c.b.Len()
		for cut > 0 && cut < len(s) && !utf8Start(s[cut]) {
			cut--
		}
		c.dropped += int64(len(s) - cut)
		s = s[:cut]
	}
	c.b.WriteString(s)
	return s
}

// text returns the kept text, with a marker when bytes were dropped here
// or (extra) in the sandbox.
func (c *capBuffer) text(extra int64) (string, bool) {
	n := c.dropped + extra
	if n == 0 {
		return c.b.String(), false
	}
	s := c.b.String()
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s + "[output truncated: " + strconv.FormatInt(n, 10) + " more bytes not shown]\n", true
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// partial returns the output a call produced before it was abandoned.
func (c *callState) partial(began time.Time) *Result {
	res := &Result{Duration: time.Since(began)}
	var t1, t2 bool
	res.Stdout, t1 = c.stdout.text(0)
	res.Stderr, t2 = c.stderr.text(0)
	res.Truncated = t1 || t2
	return res
}

// finish turns the call's result frame into its Result; timedOut says
// the host interrupted it for its timeout.
func (c *callState) finish(f frame, timedOut bool) *Result {
	res := &Result{
		Duration:         time.Duration(f.DurationMS * float64(time.Millisecond)),
		ExceptionType:    f.ExcType,
		ExceptionMessage: f.ExcMessage,
		Traceback:        f.Traceback,
	}
	var t1, t2 bool
	res.Stdout, t1 = c.stdout.text(f.Dropped["stdout"])
	res.Stderr, t2 = c.stderr.text(f.Dropped["stderr"])
	res.Truncated = t1 || t2
	c.inline.attach(f.Files)
	res.Images, res.Files = c.images.images, f.Files
	if note := c.images.note(f.Dropped["images"]); note != "" {
		res.Notes = append(res.Notes, note)
	}
	if n := f.Dropped["files"]; n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("[%d more changed files under %s not listed: a call lists at most %d]", n, OutDir, maxOutFiles))
	}
	switch {
	case timedOut:
		res.Status = StatusTimeout
	case f.Status == statusOK:
		res.Status = StatusSuccess
	case f.Status == statusExit:
		res.Status, res.ExitCode = StatusExit, f.ExitCode
	default: // error, or interrupted by something else than our timeout
		res.Status = StatusError
	}
	return res
}
