package tasks

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/sandboxfile"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/live"
)

// A Task is a run_python call a client follows by its task ID. The
// replica that runs it holds it; under a shared handle key it also keeps
// its record in the sandbox (record.go), where any replica reads it.
type Task struct {
	id           string
	nonce        string             // names its record in the sandbox; "": kept by this replica only
	sb           handle.Sandbox     // the sandbox of a handle's task
	files        sandboxfile.Files  // how this replica reaches its record (with nonce)
	ss           *mcp.ServerSession // the MCP session of a session's task; nil under a handle
	owner        string             // the handle key or the client session's name, for the bound per sandbox
	created      time.Time
	timeout      time.Duration
	ttl          time.Duration                    // kept this long after it ended
	resultStatus func(*mcp.CallToolResult) string // the status a call's result carries
	cancel       context.CancelFunc               // interrupts the call
	bound        chan struct{}                    // closed once its ID may be answered
	placed       chan struct{}                    // closed once its call holds its place in its sandbox's queue
	placeMu      sync.Once
	done         chan struct{} // closed once it ended

	mu        sync.Mutex
	status    string
	updated   time.Time
	ended     time.Time
	queued    bool                      // waiting for the call before it in its sandbox
	tail      string                    // its newest output
	report    *entrypoint.Progress      // the code's newest report
	inputs    map[string]*live.Question // questions waiting for the client's answer
	seq       int                       // numbers its questions
	cancelled bool                      // the client asked to cancel it
	ctlAck    int64                     // the highest sequence of "ctl" applied
	result    *mcp.CallToolResult
	failure   *taskError
	changed   chan struct{} // closed, and replaced, on every change
}

// newTask returns a task, not yet bound, of a call with timeout, kept
// ttl after it ends; resultStatus names the status of its result.
func newTask(timeout, ttl time.Duration, resultStatus func(*mcp.CallToolResult) string) *Task {
	now := time.Now()
	return &Task{created: now, timeout: timeout, ttl: ttl, resultStatus: resultStatus, bound: make(chan struct{}), placed: make(chan struct{}), done: make(chan struct{}),
		status: taskWorking, updated: now, inputs: map[string]*live.Question{}, changed: make(chan struct{})}
}

// Created returns when the task was created.
func (t *Task) Created() time.Time { return t.created }

// LogValue implements slog.LogValuer: a log shows the task's ID
// redacted.
func (t *Task) LogValue() slog.Value { return slog.StringValue(redactTaskID(t.id)) }

// Interrupt interrupts the task's call (its MCP session ends, say); the
// task ends as the call does.
func (t *Task) Interrupt() { t.cancel() }

// acknowledge records that the "ctl" of sequence seq was applied, a
// change when it is newer than the last.
func (t *Task) acknowledge(seq int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if seq <= t.ctlAck {
		return false
	}
	t.ctlAck = seq
	t.touch()
	return true
}

// touch records a change; t.mu is held.
func (t *Task) touch() {
	t.updated = time.Now()
	close(t.changed)
	t.changed = make(chan struct{})
}

// watch returns a channel closed on the task's next change.
func (t *Task) watch() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.changed
}

// Output records a piece of the call's output (entrypoint.Call.OnOutput).
func (t *Task) Output(_, data string) {
	if data == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tail = live.KeepTail(t.tail+data, taskTailBytes)
	t.touch()
}

// Progress records the code's report (entrypoint.Call.OnProgress).
func (t *Task) Progress(p entrypoint.Progress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.report = &p
	t.touch()
}

// Place records that the task's call holds its place in its sandbox's
// queue (running, or in line).
func (t *Task) Place() { t.placeMu.Do(func() { close(t.placed) }) }

// SetQueued records whether the call waits for the one before it.
func (t *Task) SetQueued(q bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.queued = q
	t.touch()
}

// Ask puts a question of the task's call to the client: the task waits
// for input with the question, until tasks/update brings the answer or
// ctx ends.
func (t *Task) Ask(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	t.mu.Lock()
	t.seq++
	q := live.NewQuestion(fmt.Sprintf("confirm-%d", t.seq), params)
	t.inputs[q.ID] = q
	t.status = taskInputRequired
	t.touch()
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.inputs, q.ID)
		if len(t.inputs) == 0 && t.status == taskInputRequired {
			t.status = taskWorking
		}
		t.touch()
		t.mu.Unlock()
	}()
	select {
	case r := <-q.Answered():
		if r == nil {
			return nil, fmt.Errorf("the client's answer to %s is not an elicitation result", q.ID)
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// answer hands the client's responses to the questions waiting for
// them; responses to no waiting question are ignored, as the extension
// asks. It returns how many it took.
func (t *Task) answer(responses mcp.InputResponseMap) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for key, v := range responses {
		q, ok := t.inputs[key]
		if !ok {
			continue
		}
		r, _ := v.(*mcp.ElicitResult)
		delete(t.inputs, key)
		q.Answer(r)
		n++
	}
	if n > 0 {
		if len(t.inputs) == 0 && t.status == taskInputRequired {
			t.status = taskWorking
		}
		t.touch()
	}
	return n
}

// requestCancel interrupts the task's call, once; an ended task stays as
// it ended.
func (t *Task) requestCancel() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.terminal() || t.cancelled {
		return
	}
	t.cancelled = true
	t.touch()
	t.cancel()
}

// terminal reports whether the task ended; t.mu is held.
func (t *Task) terminal() bool { return taskEnded(t.status) }

// Lost ends the task as failed: its sandbox, or the bridge, was lost.
func (t *Task) Lost(why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.terminal() {
		return
	}
	t.failure = &taskError{Code: -32603, Message: why}
	t.finish(taskFailed)
}

// end ends the task with the call's result: completed, or cancelled when
// the client cancelled it before it finished.
func (t *Task) end(res *mcp.CallToolResult) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.terminal() {
		return
	}
	switch {
	case t.cancelled:
		t.finish(taskCancelled)
	case res == nil:
		t.failure = &taskError{Code: -32603, Message: "the call ended without a result"}
		t.finish(taskFailed)
	default:
		t.result = res
		t.finish(taskCompleted)
	}
}

// finish sets the terminal status; t.mu is held.
func (t *Task) finish(status string) {
	t.status = status
	t.ended = time.Now()
	for k, q := range t.inputs {
		delete(t.inputs, k)
		q.Answer(nil)
	}
	t.touch()
	close(t.done)
}

// expired reports whether the task ended more than its TTL ago.
func (t *Task) expired(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.terminal() && now.Sub(t.ended) > t.ttl
}

// view returns what the task shows now.
func (t *Task) view() taskView {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := taskView{ID: t.id, Status: t.status, Created: t.created, Updated: t.updated, Result: t.result, Error: t.failure, Progress: t.report,
		CtlAck: t.ctlAck}
	// Kept ttl after it ends; while it runs, for as long as it may run
	// and ttl after.
	v.TTL = t.timeout + t.ttl
	if !t.ended.IsZero() {
		v.TTL = t.ended.Sub(t.created) + t.ttl
	}
	if len(t.inputs) > 0 {
		v.Inputs = mcp.InputRequestMap{}
		for k, q := range t.inputs {
			v.Inputs[k] = q.Params
		}
	}
	v.Message = t.message()
	return v
}

// message is the task's status message; t.mu is held.
func (t *Task) message() string {
	switch t.status {
	case taskInputRequired:
		return "waiting for the client's answer to a confirmation the code's call of a tool needs (tasks/update)"
	case taskCancelled:
		return "cancelled by the client: the code was interrupted; the sandbox and its state are kept"
	case taskFailed:
		return t.failure.Message
	case taskCompleted:
		return "the call ended: " + t.resultStatus(t.result)
	}
	if t.queued {
		return "waiting for the call before it in this sandbox to end"
	}
	var parts []string
	if r := t.report; r != nil {
		p := fmt.Sprintf("progress %g", r.Progress)
		if r.Total > 0 {
			p += fmt.Sprintf("/%g", r.Total)
		}
		if r.Message != "" {
			p += ": " + r.Message
		}
		parts = append(parts, p)
	}
	if out := live.LastLines(t.tail, taskTailLines); out != "" {
		parts = append(parts, "latest output:\n"+out)
	}
	if len(parts) == 0 {
		return fmt.Sprintf("running for %s", time.Since(t.created).Round(time.Second))
	}
	return strings.Join(parts, "; ")
}

// taskKey keys, in a call's context, the task it runs as.
type taskKey struct{}

// Of returns the task the call of ctx runs as, or nil.
func Of(ctx context.Context) *Task {
	t, _ := ctx.Value(taskKey{}).(*Task)
	return t
}

// redactTaskID is what a log shows of a task ID.
func redactTaskID(id string) string {
	if len(id) > len(sessionTaskPrefix) && id[:len(sessionTaskPrefix)] == sessionTaskPrefix {
		return id[:len(sessionTaskPrefix)+6] + "…"
	}
	return handle.RedactTask(id)
}
