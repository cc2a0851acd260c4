package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/sandboxfile"
)

// Under a shared handle key, a task's record lives in its sandbox, where
// every replica reads it: the directory taskDir/NONCE holds "state", the
// task as the replica running it last showed it (written on every
// change, at most every taskWriteEvery, and every taskBeat while it
// runs), and "ctl", what other replicas bring it: the client's answers
// and its cancellation, which the running replica polls. Both are
// records of sandboxfile, tagged under the handle key with the nonce and
// their name, as the answers of waiting calls are: the sandbox's code
// can delete them, never forge them. The engine reads and writes them
// (engine.FileReacher), never the sandbox's runtime, so that no replica
// disturbs the call another runs.

// taskDir is where a sandbox keeps its tasks' records: beside the kept
// outputs, out of the files out, pruned by the runtime to its newest 16.
const taskDir = entrypoint.OutDir + "/.mcp-tasks"

// Timing and bounds of the records.
const (
	taskWriteEvery = 250 * time.Millisecond
	taskBeat       = 5 * time.Second
	// taskStale is how old the record of a running task may be before
	// other replicas take the replica running it for lost.
	taskStale = 3 * taskBeat
	// taskPollMin and taskPollMax bound the running replica's polling of
	// "ctl".
	taskPollMin = 250 * time.Millisecond
	taskPollMax = time.Second
	// taskReadFresh is how long a replica answers tasks/get from the
	// record it read last: clients that poll a thousand times a second
	// cost one read of the sandbox every taskReadFresh.
	taskReadFresh = 250 * time.Millisecond
	// taskIOTimeout bounds one read or write of a record.
	taskIOTimeout   = 15 * time.Second
	maxControlBytes = 4 << 20
	// maxStateBytes bounds a task's state read back: its result, at most
	// two streams at the largest output a call keeps, and room for the
	// notes.
	maxStateBytes = 64 << 20
)

// A taskControl is what other replicas bring a running task. Seq numbers
// its writes: the running replica acknowledges the highest it applied in
// its record (taskView.CtlAck), which the writer waits for (ack.go).
type taskControl struct {
	Seq       int64                      `json:"seq,omitempty"`
	Cancel    bool                       `json:"cancel,omitempty"`
	Responses map[string]json.RawMessage `json:"responses,omitempty"`
}

// writeTaskFile writes data, a record, as the file name of the task nonce
// in the sandbox of f.
func (m *Manager) writeTaskFile(ctx context.Context, f sandboxfile.Files, nonce, name string, data []byte) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskIOTimeout)
	defer cancel()
	return m.host.Files.WriteRecord(ctx, f, taskDir+"/"+nonce, name, data, nonce, name)
}

// readTaskFile returns the data of the record name of the task nonce in
// the sandbox of f, once whole and with a good tag; an error wrapping
// fs.ErrNotExist when it is not there.
func (m *Manager) readTaskFile(ctx context.Context, f sandboxfile.Files, nonce, name string, max int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, taskIOTimeout)
	defer cancel()
	data, err := m.host.Files.ReadRecord(ctx, f, taskDir+"/"+nonce, name, max, nonce, name)
	var re *sandboxfile.RecordError
	if errors.As(err, &re) {
		re.What = "the task's " + name // as tasks/get shows it
	}
	return data, err
}

// writeTaskRecord writes the task's state into its sandbox.
func (m *Manager) writeTaskRecord(ctx context.Context, t *Task) error {
	v := t.view()
	v.Beat = time.Now()
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding the task: %w", err)
	}
	return m.writeTaskFile(ctx, t.files, t.nonce, "state", data)
}

// keepTaskRecord keeps the record of t, which this replica runs, in its
// sandbox until it ended: on every change (at most every
// taskWriteEvery) and every taskBeat; meanwhile it polls what other
// replicas bring the task (answers, cancellation).
func (m *Manager) keepTaskRecord(t *Task) {
	m.writers.Add(1)
	defer m.writers.Done()
	ctx := context.Background()
	log := m.log.With("task", handle.RedactTask(t.id))
	written := time.Now()
	poll := taskPollMin
	pollAt := time.Now().Add(poll)
	dirty := false
	for {
		changed := t.watch()
		wait := time.Until(pollAt)
		if dirty {
			wait = min(wait, time.Until(written.Add(taskWriteEvery)))
		} else {
			wait = min(wait, time.Until(written.Add(taskBeat)))
		}
		timer := time.NewTimer(max(wait, 0))
		select {
		case <-t.done:
			timer.Stop()
			if err := m.writeTaskRecord(ctx, t); err != nil {
				log.Warn("keeping the ended task's record in the sandbox", "err", err)
			}
			return
		case <-changed:
			timer.Stop()
			dirty = true
			continue
		case <-timer.C:
		}
		now := time.Now()
		if dirty && now.Sub(written) >= taskWriteEvery || now.Sub(written) >= taskBeat {
			err := m.writeTaskRecord(ctx, t)
			// A write that failed (a busy engine) is tried again after
			// taskWriteEvery, not at the next beat: the change it
			// carried would be seen seconds late by the other replicas.
			written, dirty = time.Now(), err != nil
			if err != nil {
				log.Debug("keeping the task's record in the sandbox", "err", err)
			}
		}
		if !now.Before(pollAt) {
			if m.applyControl(ctx, t) {
				poll = taskPollMin
			} else {
				poll = min(2*poll, taskPollMax)
			}
			pollAt = time.Now().Add(poll)
		}
	}
}

// applyControl reads what other replicas brought t and applies it; it
// reports whether anything was new.
func (m *Manager) applyControl(ctx context.Context, t *Task) bool {
	data, err := m.readTaskFile(ctx, t.files, t.nonce, "ctl", maxControlBytes)
	if err != nil {
		return false
	}
	var c taskControl
	if json.Unmarshal(data, &c) != nil {
		return false
	}
	// Acknowledged in the record whatever it brought: the writer waits
	// for it, and cancels the call itself when it does not come.
	news := t.acknowledge(c.Seq)
	if len(c.Responses) > 0 {
		raw, _ := json.Marshal(c.Responses)
		var responses mcp.InputResponseMap
		if json.Unmarshal(raw, &responses) == nil && t.answer(responses) > 0 {
			news = true
		}
	}
	if c.Cancel {
		t.mu.Lock()
		already := t.cancelled || t.terminal()
		t.mu.Unlock()
		if !already {
			t.requestCancel()
			news = true
		}
	}
	return news
}

// remoteTask returns the task id (tk) that another replica runs or ran,
// as its record in the sandbox shows it; a running task whose record
// stopped being written is failed: its replica was lost.
func (m *Manager) remoteTask(ctx context.Context, id string, tk handle.Task) (taskView, error) {
	c := &m.reads
	c.mu.Lock()
	if e, ok := c.m[id]; ok && time.Since(e.at) < taskReadFresh {
		c.mu.Unlock()
		return e.v, nil
	}
	c.mu.Unlock()
	res, err, _ := c.group.Do(id, func() (any, error) {
		v, err := m.readRemoteTask(context.WithoutCancel(ctx), id, tk)
		if err != nil {
			return taskView{}, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.m == nil {
			c.m = map[string]cachedTask{}
		}
		now := time.Now()
		for k, e := range c.m {
			if now.Sub(e.at) >= taskReadFresh {
				delete(c.m, k)
			}
		}
		c.m[id] = cachedTask{v: v, at: now}
		return v, nil
	})
	return res.(taskView), err
}

// readRemoteTask reads the record of task id (tk) from its sandbox.
func (m *Manager) readRemoteTask(ctx context.Context, id string, tk handle.Task) (taskView, error) {
	files := sandboxfile.Engine(m.host.Engine, tk.Sandbox)
	data, err := m.readTaskFile(ctx, files, tk.Nonce, "state", maxStateBytes)
	// The replica running the task rewrites its record: an engine may
	// replace the file (a read meanwhile finds none) or write it in place
	// (a read meanwhile finds it incomplete). Read again before deciding.
	for wait := 50 * time.Millisecond; err != nil && !gone(err) && wait <= 400*time.Millisecond && ctx.Err() == nil; wait *= 2 {
		time.Sleep(wait)
		data, err = m.readTaskFile(ctx, files, tk.Nonce, "state", maxStateBytes)
	}
	now := time.Now()
	ttl := m.host.MaxTimeout + m.opts.TTL
	if err != nil {
		switch {
		case gone(err) && now.Sub(tk.Minted) > ttl:
			return taskView{}, errTask("task has expired (and its sandbox is gone)")
		case gone(err):
			// What the task became is lost with its sandbox.
			return taskView{ID: id, Status: taskFailed, Created: tk.Minted, Updated: now, TTL: ttl,
				Error:   &taskError{Code: -32603, Message: "the task's sandbox is gone (" + err.Error() + "): its call and result are lost"},
				Message: "the task's sandbox is gone: " + err.Error()}, nil
		case errors.Is(err, fs.ErrNotExist):
			return taskView{}, errTask("task not found: its record is no longer in its sandbox (a sandbox keeps its 16 newest tasks; the code may have removed it)")
		}
		return taskView{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "reading the task's record from its sandbox: " + err.Error()}
	}
	var v taskView
	if err := json.Unmarshal(data, &v); err != nil || v.ID != id {
		return taskView{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task's record in its sandbox does not decode"}
	}
	switch {
	case taskEnded(v.Status) && now.After(v.Created.Add(v.TTL)):
		return taskView{}, errTask("task has expired")
	case !taskEnded(v.Status) && now.Sub(v.Beat) > taskStale:
		v.Status, v.Inputs, v.Updated = taskFailed, nil, v.Beat
		v.Error = &taskError{Code: -32603, Message: fmt.Sprintf("the bridge replica running this task was lost: its record was last written %v ago", now.Sub(v.Beat).Round(time.Second))}
		v.Message = v.Error.Message
	}
	return v, nil
}

// remoteControl brings another replica's task the client's responses,
// or its cancellation, through the task's "ctl" in its sandbox, and
// returns the sequence of the ctl written, whose acknowledgement the
// caller waits for (awaitControlAck); a task that ended is left as it
// is (0).
func (m *Manager) remoteControl(ctx context.Context, id string, tk handle.Task, responses mcp.InputResponseMap, cancel bool) (int64, error) {
	v, err := m.readRemoteTask(ctx, id, tk)
	if err != nil {
		return 0, err
	}
	if v.Status != taskWorking && v.Status != taskInputRequired {
		return 0, nil
	}
	var c taskControl
	files := sandboxfile.Engine(m.host.Engine, tk.Sandbox)
	if data, err := m.readTaskFile(ctx, files, tk.Nonce, "ctl", maxControlBytes); err == nil {
		json.Unmarshal(data, &c)
	}
	// A sequence past every one written or acknowledged: the code may
	// have deleted "ctl" or put an older one back.
	c.Seq = max(c.Seq, v.CtlAck) + 1
	if cancel {
		c.Cancel = true
	}
	for k, r := range responses {
		raw, err := json.Marshal(r)
		if err != nil {
			continue
		}
		if c.Responses == nil {
			c.Responses = map[string]json.RawMessage{}
		}
		c.Responses[k] = raw
	}
	data, err := json.Marshal(c)
	if err != nil || len(data) > maxControlBytes {
		return 0, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the responses cannot be carried to the task (too large, or not encodable)"}
	}
	if err := m.writeTaskFile(ctx, files, tk.Nonce, "ctl", data); err != nil {
		return 0, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "carrying the request to the replica running the task: " + err.Error()}
	}
	return c.Seq, nil
}

// gone reports whether err says the sandbox is gone.
func gone(err error) bool {
	return errors.Is(err, engine.ErrNoSandbox) || errors.Is(err, engine.ErrSandboxExited)
}
