package entrypoint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// SleepOptions make an idle sandbox sleep instead of stopping: its
// memory is checkpointed to the engine's disk (engine.Snapshotter) and
// its container stopped, and the next call restores it with its state.
type SleepOptions struct {
	// MaxBytes bounds the memory of a sandbox that sleeps, judged from
	// the engine's reading before the checkpoint is taken: a larger one
	// stays awake (the log says why). Zero: no bound.
	MaxBytes int64
}

// wakeAttachTries is how many times a woken sandbox is attached to before
// its failure is the call's.
const wakeAttachTries = 8

// sleepTimeout bounds a checkpoint or a restore.
const sleepTimeout = 2 * time.Minute

// sleepIdle puts ctr, the session's idle sandbox, to sleep; it reports
// false when the sandbox was left attached and awake (too large, or not
// made persistent) for another idle period, true when the session let
// it go: asleep, or awake and persistent for another bridge to sleep
// or for the next call to attach to again.
// The caller holds the session (sem) and has taken ctr from s.ctr.
func (s *Session) sleepIdle(ctr *container) (handled bool) {
	ctx, cancel := context.WithTimeout(context.Background(), sleepTimeout)
	defer cancel()
	sl := s.opts.Sleep
	id, engineName := ctr.sb.ID(), placedOn(ctr.sb)
	if sl.MaxBytes > 0 && engine.MayBe[engine.MemoryReader](s.eng) {
		used, err := engine.SandboxMemory(ctx, s.eng, engineName, id)
		if err == nil && used > sl.MaxBytes {
			s.log.Info("not putting the idle sandbox to sleep: its memory is over MCP_BRIDGE_SNAPSHOT_MAX; it stays awake",
				"memory", used, "max", sl.MaxBytes, "id", shortID(id))
			return false
		}
	}
	s.mu.Lock()
	resume := s.resume
	shared := resume != nil && !s.ownsSleeper // other bridges may drive it
	s.mu.Unlock()
	if resume == nil {
		// The runtime outlives its streams from now on, and never ends
		// itself: the bridge puts it to sleep, or removes it.
		if err := ctr.send(persistFrame{T: framePersist, IdleMS: 0}); err != nil {
			s.log.Warn("making the idle sandbox persistent, to put it to sleep", "err", err)
			return false
		}
		resume = &resumeRef{engine: engineName, ref: id}
	}
	_ = ctr.leave()
	if shared && s.othersCalled(ctx, resume) {
		return true // another replica's: it puts it to sleep
	}
	s.mu.Lock()
	if s.resume == nil {
		s.resume, s.ownsSleeper = resume, true
	}
	s.mu.Unlock()
	slept0 := time.Now()
	info, err := engine.SleepSandbox(ctx, s.eng, resume.engine, resume.ref)
	if errors.Is(err, engine.ErrSandboxExited) {
		s.log.Info("the idle sandbox was put to sleep by another bridge", "id", shortID(id))
		return true
	}
	if err != nil {
		// It runs on, persistent: the next call attaches to it again.
		s.log.Warn("putting the idle sandbox to sleep failed; it stays awake", "id", shortID(id), "err", err)
		return true
	}
	s.mu.Lock()
	s.asleep = time.Now()
	s.mu.Unlock()
	s.log.Info("the idle sandbox is asleep", "id", shortID(id), "took", time.Since(slept0).Round(time.Millisecond), "bytes", info.Bytes)
	return true
}

// othersCalled reports whether this bridge should leave the persistent
// sandbox r awake: another bridge called it within the idle timeout,
// runs a call in it, or is putting it to sleep now. It asks the runtime,
// the arbiter of the bridges that share the sandbox, over a relay
// connection of its own (claimSleep).
func (s *Session) othersCalled(ctx context.Context, r *resumeRef) bool {
	probe, err := resumeContainer(ctx, s.eng, r, &s.opts, s.log)
	if err != nil {
		return false
	}
	defer probe.leave()
	if !probe.claimSleep(s.opts.idleTimeout()) {
		s.log.Info("not putting the sandbox to sleep: another bridge called it since, or puts it to sleep")
		return true
	}
	return false
}

// sleepClaimFrame asks the runtime for the right to put its sandbox to
// sleep: granted when no call runs, none ended within IdleMS, and no
// other host was granted it within a few seconds (PROTOCOL.md).
type sleepClaimFrame struct {
	T      string `json:"t"`
	IdleMS int64  `json:"idle_ms"`
}

// claimTimeout bounds the wait for the answer to a sleep claim; a
// runtime that does not answer (an older one) grants nothing.
const claimTimeout = 5 * time.Second

// claimSleep asks the runtime of ctr for the right to put the sandbox to
// sleep after idle without a call, so that of several bridges that
// would, one does.
func (ctr *container) claimSleep(idle time.Duration) bool {
	if err := ctr.send(sleepClaimFrame{T: frameSleepClaim, IdleMS: max(idle.Milliseconds(), 0)}); err != nil {
		return false
	}
	t := time.NewTimer(claimTimeout)
	defer t.Stop()
	select {
	case ok := <-ctr.claims:
		return ok
	case <-ctr.dead:
	case <-t.C:
	}
	return false
}

// wake restores the sleeping sandbox r when it does not run, and
// returns how long that took (0: it ran, or another bridge woke it).
func wake(ctx context.Context, eng engine.Engine, r *resumeRef) (time.Duration, error) {
	t0 := time.Now()
	woke, err := engine.WakeSandbox(ctx, eng, r.engine, r.ref)
	if err != nil {
		return 0, err
	}
	if !woke {
		return 0, nil
	}
	return time.Since(t0), nil
}

// resumeOrWake attaches to the persistent sandbox r; one that stopped
// asleep is woken first, when the session's sandboxes sleep. It returns
// how long the wake took (0: none).
func (s *Session) resumeOrWake(ctx context.Context, r *resumeRef) (*container, time.Duration, error) {
	ctr, err := resumeContainer(ctx, s.eng, r, &s.opts, s.log)
	if err == nil || s.opts.Sleep == nil || !errors.Is(err, engine.ErrSandboxExited) {
		return ctr, 0, err
	}
	took, werr := wake(ctx, s.eng, r)
	if werr != nil {
		if errors.Is(werr, engine.ErrNoCheckpoint) {
			return nil, 0, fmt.Errorf("%w: it was asleep and its checkpoint is gone (%v)", ErrPinnedGone, werr)
		}
		return nil, 0, fmt.Errorf("waking the sleeping sandbox: %w", werr)
	}
	// The engine may refuse an exec for a moment after a restore ("OCI
	// runtime exec failed"): the attachment is tried again, a few times.
	for try := 0; ; try++ {
		ctr, err = resumeContainer(ctx, s.eng, r, &s.opts, s.log)
		if err == nil || try == wakeAttachTries-1 || ctx.Err() != nil {
			break
		}
		s.log.Debug("attaching to the woken sandbox", "try", try+1, "err", err)
		time.Sleep(time.Duration(try+1) * 100 * time.Millisecond)
	}
	if err != nil {
		return nil, 0, err
	}
	if took > 0 {
		s.log.Info("woke the sleeping sandbox", "id", shortID(r.ref), "took", took.Round(time.Millisecond))
	}
	return ctr, took, nil
}

// wokeNotice is the notice of a call that woke its sandbox.
func wokeNotice(took time.Duration, since time.Time) string {
	idle := ""
	if !since.IsZero() {
		idle = fmt.Sprintf(" for %v", time.Since(since).Round(time.Second))
	}
	return fmt.Sprintf("the sandbox was asleep%s (checkpointed to disk) and was woken in %.2f s: its variables, imports and files are as they were; connections it had open are closed",
		idle, took.Seconds())
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// removeSleeper removes the sandbox r, made persistent to sleep (or
// forked) for a session that ends, asleep or awake.
func (s *Session) removeSleeper(r *resumeRef) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := engine.RemoveSandbox(ctx, s.eng, r.engine, r.ref); err != nil {
		s.log.Warn("removing the session's sandbox", "id", shortID(r.ref), "err", err)
	}
}

// Adopt returns a pinned Session on the persistent sandbox ref, as
// Resume does, that removes it when it ends (Close): a fork made for
// this bridge's client.
func Adopt(eng engine.Engine, engineName, ref string, opts *Options) *Session {
	s := Resume(eng, engineName, ref, opts)
	s.ownsSleeper = true
	return s
}

// Asleep reports whether the session's sandbox sleeps: the next call
// wakes it.
func (s *Session) Asleep() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.asleep.IsZero() && s.ctr == nil
}

// TakeWokeNotice returns, once, the notice of the sandbox's last wake:
// how long it slept and how long the wake took ("" when it was not woken
// since the last notice).
func (s *Session) TakeWokeNotice() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.woke == 0 {
		return ""
	}
	n := wokeNotice(s.woke, s.asleep)
	s.woke, s.asleep = 0, time.Time{}
	return n
}

// SleepIfIdle puts the persistent sandbox ref to sleep when no bridge
// called it for idle and none runs a call in it, as its runtime says over
// a relay connection of its own (its ready frame): how a replica sleeps
// the sandbox of a handle whose replica is gone. It reports whether it
// did.
func SleepIfIdle(ctx context.Context, eng engine.Engine, engineName, ref string, idle time.Duration, log *slog.Logger) (bool, error) {
	r := &resumeRef{engine: engineName, ref: ref}
	opts := &Options{IdleTimeout: idle, Logger: log}
	probe, err := resumeContainer(ctx, eng, r, opts, log)
	if err != nil {
		return false, err
	}
	granted := probe.claimSleep(idle)
	_ = probe.leave()
	if !granted {
		return false, nil
	}
	info, err := engine.SleepSandbox(ctx, eng, engineName, ref)
	if err != nil {
		return false, err
	}
	log.Info("put an idle sandbox that no bridge holds to sleep", "id", shortID(ref), "took", info.Took.Round(time.Millisecond), "bytes", info.Bytes)
	return true, nil
}
