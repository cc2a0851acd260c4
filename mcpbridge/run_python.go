package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/approval"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/httpserve"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/live"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/render"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/tasks"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/toolsearch"
)

// runPython is the run_python tool handler. A call whose client asks
// through input-required results (protocol 2026-07-28) runs on its own
// and may answer with a question first (suspend.go); the others run
// here, in the handler.
func (b *Bridge) runPython(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params.RequestState != "" {
		return b.resume(ctx, req), nil
	}
	b.calls.Add(1)
	began := time.Now()
	toolsearch.Warm()
	mode := b.opts.OutputMode
	args, problem := parseArgs(req.Params.Arguments, b.opts.DefaultTimeout, b.opts.MaxTimeout, b.servers.Known)
	var cs *clientSession
	// finish records a call that ended with result: metrics and audit.
	finish := func(result *mcp.CallToolResult, outBytes int) {
		b.metrics.call(render.Status(result), time.Since(began))
		auditRunPython(b.audit, req, cs, args, began, render.Status(result), outBytes)
		b.calls.Add(-1)
	}
	if problem != "" {
		res := render.Invalid(problem).Result(mode)
		finish(res, 0)
		return res, nil
	}
	if args.fork > 0 {
		if problem := b.forks.problem(req, args.fork); problem != "" {
			res := render.NotRun(problem).Result(mode)
			finish(res, 0)
			return res, nil
		}
	}
	if over := b.quota.take(req.Extra); over != "" {
		res := render.NotRun(over).Result(mode)
		finish(res, 0)
		return res, nil
	}
	cs, hc, problem := b.handles.sandboxFor(req, args)
	if problem != "" {
		res := render.NotRun(problem).Result(mode)
		finish(res, 0)
		return res, nil
	}
	var minted string
	if hc != nil && hc.minted {
		h, err := b.handles.mint(b.traceStart(withEvents(ctx, cs.events)), hc)
		if err != nil {
			cs.close()
			res := render.Failed(err).Result(mode)
			finish(res, 0)
			return res, nil
		}
		minted = h
	}
	if cs == nil {
		var err error
		if cs, err = b.sessionOf(req.Session, req.Extra); err != nil {
			res := render.Failed(err).Result(mode)
			finish(res, 0)
			return res, nil
		}
	}
	if hc != nil {
		cs.events.bind(req.Session) // this request's, for its notifications
	}
	// Every line of the call names its client session (the bridge's name
	// and, over HTTP, the Mcp-Session-Id) and the call.
	log := cs.events.log.With("call", b.callSeq.Add(1))
	if req.Session != nil && req.Session.ID() != "" {
		log = log.With("mcp_session", req.Session.ID())
	}
	log.Debug("run_python call", "timeout", args.timeout, "servers", args.servers)
	if t := tasks.Of(ctx); t != nil {
		if problem := b.bindTask(ctx, t, cs, req); problem != "" {
			res := render.NotRun(problem).Result(mode)
			finish(res, 0)
			return res, nil
		}
		return b.runTask(ctx, req, cs, args, log, minted, finish, t), nil
	}
	if asksByResult(req.Session) {
		return b.runSuspendable(ctx, req, cs, args, log, minted, finish), nil
	}
	// Cancelled too when the HTTP request the call came in ends: the
	// client went away, and with no stream to resume its answer can
	// never be delivered.
	ctx, cancel := b.requests.Tie(ctx, req.Extra)
	defer cancel()
	stopHalt := context.AfterFunc(cs.halted, cancel) // its MCP session is ending
	defer stopHalt()
	res, outBytes := b.execute(ctx, req, cs, args, log, nil, nil)
	if minted != "" {
		res = withHandle(res, minted)
	}
	log.Debug("run_python answered", "status", render.Status(res), "took", time.Since(began))
	finish(res, outBytes)
	return res, nil
}

// execute runs a validated call in its client session's sandbox and
// returns its result and the bytes of output it made; log is the call's.
// ask, when set, is how a confirmation asks the client (else it elicits
// during the call). t, when set, is the task the call runs as: it
// follows the call's output and reports, instead of progress
// notifications, which tasks do not carry.
func (b *Bridge) execute(ctx context.Context, req *mcp.CallToolRequest, cs *clientSession, args callArgs, log *slog.Logger, ask approval.AskFunc, t *tasks.Task) (*mcp.CallToolResult, int) {
	mode := b.opts.OutputMode
	call := &entrypoint.Call{Code: args.code, Timeout: args.timeout}
	var watchPull engine.PullWatcher // a client told how an image pull goes
	if t != nil {
		call.OnOutput, call.OnProgress = t.Output, t.Progress
	} else if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		// The client follows the call: heartbeats from here on (loading
		// servers can take a while), the pull of the sandbox image it
		// waits for, then its output and the code's reports as they come.
		rep := live.StartReporter(ctx, token, req.Session.NotifyProgress)
		call.OnOutput, call.OnProgress, watchPull = rep.Output, rep.Progress, rep.Pull
		defer rep.Stop()
	}
	var placed func() // a task is answered once its call holds its place
	if t != nil {
		t.SetQueued(true)
		placed = t.Place
	}
	leave, err := cs.queue.EnterPlaced(ctx, placed)
	if t != nil {
		t.SetQueued(false)
	}
	if err != nil {
		return render.NotRun(err.Error()).Result(mode), 0
	}
	defer leave()
	if cs.dropped.Load() {
		msg := "this replica let the handle's idle sandbox go as the call came; call again (the sandbox and its state are kept)"
		return render.NotRun(msg).Result(mode), 0
	}
	ci := &callInfo{Call: approval.Call{Ctx: ctx, Session: req.Session, Ask: ask}, who: httpserve.IdentityOf(req.Extra)}
	cs.current.Store(ci)
	defer cs.current.Store(nil)
	defer cs.install.end(ci) // an install endpoint it opened closes with it
	var endLive func()
	call.OnOutput, endLive = b.live.Load().Begin(cs.name, args.code, call.OnOutput)
	defer endLive()
	b.handles.syncLoadedServers(withEvents(ctx, cs.events), cs)
	if err := b.syncSavedTools(withEvents(ctx, cs.events), cs); err != nil {
		log.Warn("defining the tools saved since the sandbox started", "err", err)
	}
	if err := b.load(withEvents(ctx, cs.events), cs, args.servers); err != nil {
		return render.LoadFailed(err, args.servers).Result(mode), 0
	}
	cs.egress.BeginCall()
	// The sandbox image before the sandbox: a call that waits for its
	// pull is told how it goes. A failed pull is the call's error,
	// reported as Run's would be.
	var res *entrypoint.Result
	err = b.awaitImage(ctx, watchPull)
	if err == nil {
		res, err = cs.session.Run(b.traceStart(withEvents(ctx, cs.events)), call)
	}
	if errors.Is(err, entrypoint.ErrBusy) {
		// Another replica's call runs in the sandbox: wait for it, as
		// long as this call's timeout lets it.
		res, err = waitBusy(ctx, cs, call, args.timeout)
		if errors.Is(err, entrypoint.ErrBusy) {
			msg := fmt.Sprintf("the sandbox of this session handle is busy: a call through another replica runs in it, and it did not end within this call's timeout (%v); try again later", args.timeout)
			return render.NotRun(msg).Result(mode), 0
		}
	}
	if errors.Is(err, entrypoint.ErrPinnedGone) {
		msg := b.handles.gone(cs, err)
		if t != nil {
			t.Lost("the task's sandbox was lost: " + msg)
		}
		return render.NotRun(msg).Result(mode), 0
	}
	if err != nil {
		log.Warn("run_python failed", "err", err)
		b.metrics.startFailed(err)
	}
	if t != nil && errors.Is(err, entrypoint.ErrSandboxDied) {
		t.Lost("the task's sandbox was lost: " + err.Error())
	}
	var forks []string
	if args.fork > 0 && err == nil && res != nil {
		if res.Status != entrypoint.StatusSuccess {
			res.Notes = append(res.Notes, "the sandbox was not forked: the code did not end successfully")
		} else if forks, err = b.forks.fork(ctx, req, cs, args.fork); err != nil {
			log.Warn("forking the sandbox", "err", err)
			res.Notes = append(res.Notes, "the sandbox was not forked: "+err.Error())
			err = nil
		}
	}
	b.metrics.output(res)
	outBytes := 0
	if res != nil {
		outBytes = len(res.Stdout) + len(res.Stderr)
	}
	reportEvents(cs.events, res, err, args.timeout)
	out := render.FromSession(res, err, args.servers, int(args.timeout.Seconds()))
	out.AddNotice(cs.session.TakeWokeNotice())
	out.AddNotice(cs.egress.EndCall())
	maxImages, maxImageBytes := b.opts.Session.ImageLimits()
	rich := render.RichOf(ctx, res, cs.session.OpenFile, &cs.files, maxImages, maxImageBytes)
	if cs.handle != "" {
		rich.AddQuery(sessionQuery + cs.handle)
	}
	out.SetRich(rich)
	out.ApplyBudget(b.opts.OutputBudget, func(whole string) string {
		if cs.handle != "" {
			if uri := b.handles.keepOutput(ctx, cs, whole); uri != "" {
				return uri
			}
			// Kept by this replica only.
			return cs.outputs.Keep(whole) + sessionQuery + cs.handle
		}
		return cs.outputs.Keep(whole)
	})
	result := out.Result(mode)
	if len(forks) > 0 {
		render.SetForks(result, forks)
	}
	return result, outBytes
}

// waitBusy runs call again, backing off from 20 ms to 500 ms, while the
// sandbox is busy with another replica's call, for at most timeout.
func waitBusy(ctx context.Context, cs *clientSession, call *entrypoint.Call, timeout time.Duration) (*entrypoint.Result, error) {
	deadline := time.Now().Add(timeout)
	wait := 20 * time.Millisecond
	for {
		if time.Now().Add(wait).After(deadline) {
			return &entrypoint.Result{Status: entrypoint.StatusError}, entrypoint.ErrBusy
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return &entrypoint.Result{Status: entrypoint.StatusError}, ctx.Err()
		case <-t.C:
		}
		res, err := cs.session.Run(ctx, call)
		if !errors.Is(err, entrypoint.ErrBusy) {
			return res, err
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// runSuspendable starts the call on its own and waits for its answer or
// its first question. finish records the call when it ends; its result
// carries minted, the handle of the sandbox the call started, if any.
func (b *Bridge) runSuspendable(ctx context.Context, req *mcp.CallToolRequest, cs *clientSession, args callArgs, log *slog.Logger, minted string, finish func(*mcp.CallToolResult, int)) *mcp.CallToolResult {
	began := time.Now()
	// The call outlives this request when it asks; it keeps the
	// request's values, and ends with its MCP session.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	pc := live.NewPending(cancel)
	stopHalt := context.AfterFunc(cs.halted, cancel)
	go func() {
		defer cancel()
		defer stopHalt()
		res, outBytes := b.execute(cctx, req, cs, args, log, pc.Ask, nil)
		if minted != "" {
			res = withHandle(res, minted)
		}
		cs.waiting.Forget(pc)
		log.Debug("run_python answered", "status", render.Status(res), "took", time.Since(began))
		finish(res, outBytes)
		pc.End(res)
	}()
	return b.await(ctx, req, cs, pc)
}

// await waits for the pending call's result, or for a question, which it
// returns to the client as an input-required result whose request state
// names the call. The client's request going away while the call runs
// interrupts the call, as for any call; while it waits for an answer,
// it does not.
func (b *Bridge) await(ctx context.Context, req *mcp.CallToolRequest, cs *clientSession, pc *live.Pending) *mcp.CallToolResult {
	rctx, stop := b.requests.Tie(ctx, req.Extra)
	defer stop()
	select {
	case res := <-pc.Done():
		return res
	case q := <-pc.Asks():
		return b.handles.askClient(cs, pc, q)
	case <-rctx.Done():
		pc.Cancel()
		return <-pc.Done()
	}
}

// resume takes the client's answer to a pending call's question (the
// call's request state and its input responses) to the call, and waits
// for it again.
func (b *Bridge) resume(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
	mode := b.opts.OutputMode
	var cs *clientSession
	var pc *live.Pending
	var q *live.Question
	if stateless(req) {
		// No MCP session: the call waits in the sandbox of a handle, on
		// this replica or another.
		cs, pc, q = b.handles.table.resumed(req.Params.RequestState)
		if pc == nil {
			if res := b.handles.resumeElsewhere(ctx, req); res != nil {
				return res
			}
		}
	} else {
		var err error
		if cs, err = b.sessionOf(req.Session, req.Extra); err != nil {
			return render.Failed(err).Result(mode)
		}
		pc, q = cs.waiting.Resumed(req.Params.RequestState)
	}
	if pc == nil {
		msg := "this answer matches no call waiting for one in this session (it ended, timed out, or was answered already); call run_python again"
		return render.NotRun(msg).Result(mode)
	}
	answer, _ := req.Params.InputResponses[q.ID].(*mcp.ElicitResult)
	q.Answer(answer)
	return b.await(ctx, req, cs, pc)
}

// traceStart returns ctx with a StartTrace that logs the phases of a
// sandbox start, should this call start one, and feeds them to the
// metrics.
func (b *Bridge) traceStart(ctx context.Context) context.Context {
	var attrs []any
	var total time.Duration
	return b.metrics.startTrace(ctx, func(name string, took time.Duration) {
		attrs = append(attrs, name, took)
		total += took
		if name == entrypoint.PhaseInit {
			b.log.Info("sandbox started", append([]any{"took", total}, attrs...)...)
		}
	})
}

// runTask runs a call bound to its task t; ctx is the task's, apart from
// the request's. The code is interrupted when the task is cancelled or
// its MCP session ends; the call's confirmations ask through the task.
func (b *Bridge) runTask(ctx context.Context, req *mcp.CallToolRequest, cs *clientSession, args callArgs, log *slog.Logger, minted string, finish func(*mcp.CallToolResult, int), t *tasks.Task) *mcp.CallToolResult {
	stopHalt := context.AfterFunc(cs.halted, t.Interrupt)
	defer stopHalt()
	res, outBytes := b.execute(ctx, req, cs, args, log, t.Ask, t)
	if minted != "" {
		res = withHandle(res, minted)
	}
	log.Debug("run_python task ended", "task", t, "status", render.Status(res), "took", time.Since(t.Created()))
	finish(res, outBytes)
	return res
}
