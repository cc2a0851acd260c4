package tasks

import (
	"context"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
)

// A cancellation or an answer another replica brings a task goes
// through "ctl" in the task's sandbox, which the task's own code can
// delete, or put an older tagged one back, before the running replica
// reads it. So every ctl carries a sequence, the running replica writes
// the highest it applied into its tagged record (taskView.CtlAck), and
// the replica that wrote a ctl waits ctlAckWait for that: when it does
// not come, and the task still runs, it logs the tampering and cancels
// the call itself through the engine: SIGINT to the sandbox's runtime
// (ctlInterruptCode, run with the engine's exec as the sandbox user),
// and, when the call has not ended a grace later (its code ignores the
// interrupt), the sandbox is removed, as a handle's sandbox whose code
// ignores an interrupt is.

// Timing of the acknowledgement.
const (
	// ctlAckWait is how long a ctl's writer waits for its
	// acknowledgement: two beats of the running replica's record.
	ctlAckWait = 2 * taskBeat
	// ctlAckPoll is how often the writer reads the record meanwhile.
	ctlAckPoll = 500 * time.Millisecond
	// ctlForceGrace is how long the call may take to end after the
	// engine's interrupt before its sandbox is removed.
	ctlForceGrace = taskBeat + 2*time.Second
)

// ctlInterruptCode sends SIGINT to the sandbox's runtime, which
// interrupts the call it runs: the child of the container's init (or
// init itself where the runtime is PID 1, on Kubernetes), and to the
// other children of init (processes the code left behind), sparing the
// relays (whose parent is 0) and itself.
const ctlInterruptCode = `import os, signal
me = os.getpid()
try:
    init_is_runtime = open("/proc/1/comm").read().startswith("python")
except OSError:
    init_is_runtime = False
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) == me:
        continue
    try:
        st = open("/proc/%s/stat" % p).read()
        ppid = int(st[st.rindex(")") + 2:].split()[1])
    except Exception:
        continue
    if ppid == 1 or (int(p) == 1 and init_is_runtime):
        try:
            os.kill(int(p), signal.SIGINT)
        except OSError:
            pass
`

// bringControl brings another replica's task the client's responses, or
// its cancellation (remoteControl), and waits in the background for the
// running replica's acknowledgement (awaitControlAck).
func (m *Manager) bringControl(ctx context.Context, id string, tk handle.Task, responses mcp.InputResponseMap, cancel bool) error {
	seq, err := m.remoteControl(ctx, id, tk, responses, cancel)
	if err != nil || seq == 0 {
		return err
	}
	m.writers.Add(1)
	go func() {
		defer m.writers.Done()
		m.awaitControlAck(id, tk, seq, cancel)
	}()
	return nil
}

// awaitControlAck waits for the running replica to acknowledge the ctl
// of sequence seq of task id (tk), which this replica wrote (a
// cancellation when cancel is set, else answers); when it does not come
// within ctlAckWait while the task still runs, the ctl was suppressed:
// it logs so and cancels the call through the engine.
func (m *Manager) awaitControlAck(id string, tk handle.Task, seq int64, cancel bool) {
	log := m.log.With("task", handle.RedactTask(id), "ctl_seq", seq)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		select {
		case <-m.closing:
			stop()
		case <-ctx.Done():
		}
	}()
	deadline := time.Now().Add(ctlAckWait)
	for {
		v, err := m.readRemoteTask(ctx, id, tk)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && (v.CtlAck >= seq || taskEnded(v.Status)):
			return
		case err != nil && gone(err):
			return
		}
		if time.Now().After(deadline) {
			what := "answers"
			if cancel {
				what = "a cancellation"
			}
			log.Warn("a task's code suppressed what another replica brought it: its \"ctl\" was deleted or rolled back before "+
				"the running replica applied it (no acknowledgement within two beats); cancelling the call through the engine",
				"brought", what, "acknowledged", v.CtlAck, "read_err", err)
			m.forceCancel(ctx, id, tk, log)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(ctlAckPoll):
		}
	}
}

// forceCancel interrupts the call of task id in its sandbox through the
// engine and, when the task still runs ctlForceGrace later, removes the
// sandbox.
func (m *Manager) forceCancel(ctx context.Context, id string, tk handle.Task, log *slog.Logger) {
	if !engine.MayBe[engine.Resumer](m.host.Engine) {
		log.Error("cancelling a task through the engine: this engine cannot reach a sandbox it does not drive")
		return
	}
	if err := interruptSandbox(ctx, m.host.Engine, tk.Sandbox); err != nil {
		log.Warn("interrupting a task's call through the engine", "err", err)
	}
	deadline := time.Now().Add(ctlForceGrace)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(ctlAckPoll):
		}
		v, err := m.readRemoteTask(ctx, id, tk)
		if err == nil && taskEnded(v.Status) || err != nil && gone(err) {
			log.Warn("the task's call was cancelled through the engine")
			return
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskIOTimeout)
	defer cancel()
	if err := engine.RemoveSandbox(rctx, m.host.Engine, tk.Sandbox.Engine, tk.Sandbox.Ref); err != nil {
		log.Error("removing the sandbox of a task whose code ignores its cancellation", "err", err)
		return
	}
	log.Warn("removed the sandbox of a task whose code ignored the interrupt of its cancellation")
}

// interruptSandbox runs ctlInterruptCode in the sandbox sb through the
// engine and waits for it.
func interruptSandbox(ctx context.Context, eng engine.Engine, sb handle.Sandbox) error {
	ctx, cancel := context.WithTimeout(ctx, taskIOTimeout)
	defer cancel()
	s, err := engine.Resume(ctx, eng, sb.Engine, sb.Ref, []string{"python3", "-I", "-S", "-c", ctlInterruptCode})
	if err != nil {
		return err
	}
	defer s.Close()
	s.Stdin().Close()
	// Wait reports the container's state, which runs on: the exec's end
	// is what it waits for.
	_, err = s.Wait(ctx)
	return err
}
