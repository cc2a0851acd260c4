package auto

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// Defaults of MultiOptions.
const (
	defaultProbeTimeout = 5 * time.Second
	defaultMaxBackoff   = 30 * time.Second
	firstBackoff        = time.Second
)

// MultiOptions configure NewMulti.
type MultiOptions struct {
	// Endpoints are the engines, in order of preference when equally
	// loaded. NewMulti needs at least one.
	Endpoints []engine.Endpoint
	// Logger receives placement, failover and clean-up reports. Zero:
	// discarded.
	Logger *slog.Logger
	// StopGrace is the grace period between SIGTERM and SIGKILL. Zero:
	// two seconds.
	StopGrace time.Duration
	// ProbeTimeout bounds the ping (and first connection) that decides
	// whether an engine not yet known to answer, or that failed to,
	// answers, before a sandbox is placed on it. Zero: five seconds.
	ProbeTimeout time.Duration
	// MaxBackoff caps how long an unreachable engine is tried only after
	// every other; the wait starts at one second and doubles with each
	// failure in a row. Zero: 30 seconds.
	MaxBackoff time.Duration
	// Kubernetes configures the Kubernetes endpoints (namespace,
	// RuntimeClass). Zero: KubernetesOptions' defaults.
	Kubernetes engine.KubernetesOptions
}

// A Multi is an Engine over several engines (Docker, Podman or Kubernetes, local or
// remote). Each sandbox goes to the least loaded engine, the one with the
// fewest sandboxes of this Multi open, the first listed on a tie. An
// engine that cannot be reached is tried again only after every other,
// until a backoff (1 s, doubling, at most MaxBackoff) has passed, and
// then only when a ping answers; so a session whose engine died is
// re-created on another at its next start.
type Multi struct {
	opts MultiOptions
	log  *slog.Logger
	now  func() time.Time

	members []*member

	mu     sync.Mutex // guards the members' state and closed
	closed bool
}

// A memberEngine is what a Multi needs of each engine.
type memberEngine interface {
	engine.Engine
	engine.Pinger
	Close() error
}

// A member is one engine of a Multi and its state.
type member struct {
	name string
	eng  memberEngine

	// guarded by Multi.mu
	open     int       // sandboxes started and not closed, and starts under way
	answered bool      // it answered once: it is connected
	failures int       // failures to reach it in a row
	retryAt  time.Time // before it, it is tried after every other
	lastErr  error
}

// NewMulti returns a Multi over opts.Endpoints; it connects nothing yet.
func NewMulti(opts *MultiOptions) (*Multi, error) {
	m := &Multi{now: time.Now}
	if opts != nil {
		m.opts = *opts
	}
	if len(m.opts.Endpoints) == 0 {
		return nil, errors.New("multi engine: no endpoints")
	}
	if m.opts.ProbeTimeout <= 0 {
		m.opts.ProbeTimeout = defaultProbeTimeout
	}
	if m.opts.MaxBackoff <= 0 {
		m.opts.MaxBackoff = defaultMaxBackoff
	}
	m.log = lifecycle.LoggerOrDiscard(m.opts.Logger)
	for _, ep := range m.opts.Endpoints {
		a := New(&engine.AutoOptions{Backend: ep.Backend, Address: ep.Address, CertPath: ep.CertPath, Context: ep.Context,
			Logger: m.log.With("endpoint", ep.Name()), StopGrace: m.opts.StopGrace, Kubernetes: m.opts.Kubernetes})
		m.members = append(m.members, &member{name: ep.Name(), eng: a})
	}
	return m, nil
}

// Start implements Engine: it starts the sandbox on the least loaded
// engine that can start it, trying the others in turn when one cannot be
// reached or fails to start it.
func (m *Multi) Start(ctx context.Context, spec engine.Spec) (engine.Sandbox, error) {
	tried := make(map[*member]bool, len(m.members))
	var why []string
	unreachable := 0
	for {
		mb, suspect, err := m.next(tried)
		if err != nil {
			return nil, err
		}
		if mb == nil {
			break
		}
		tried[mb] = true
		if suspect {
			if err := m.probe(ctx, mb); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				why = append(why, fmt.Sprintf("%s: %v", mb.name, err))
				unreachable++
				continue
			}
		}
		sb, err := mb.eng.Start(ctx, spec)
		if err == nil {
			m.reached(mb)
			m.log.Info("sandbox placed", "engine", mb.name, "id", lifecycle.ShortID(sb.ID()))
			return &placedSandbox{Sandbox: sb, m: m, mb: mb}, nil
		}
		m.release(mb)
		if ctx.Err() != nil {
			return nil, err
		}
		if errors.Is(err, engine.ErrNoEngine) {
			m.unreachable(mb, err)
			unreachable++
		} else {
			m.log.Warn("engine failed to start a sandbox; trying the next", "engine", mb.name, "err", err)
		}
		why = append(why, fmt.Sprintf("%s: %v", mb.name, err))
	}
	if unreachable == len(m.members) {
		return nil, fmt.Errorf("%w: none of the %d engines of %s answers: %s",
			engine.ErrNoEngine, len(m.members), "MCP_BRIDGE_ENGINES", strings.Join(why, "; "))
	}
	return nil, fmt.Errorf("starting sandbox: no engine could start it: %s", strings.Join(why, "; "))
}

// next returns the member to try next, of those not tried: the least
// loaded of those not backing off (the first listed on a tie), else the
// one whose backoff ends first; nil when every member was tried. It
// counts a start under way on the member, so that concurrent starts
// spread; release gives it back when the start fails. suspect says the
// member never answered or failed to answer last, and must answer a ping
// (which connects it) within ProbeTimeout first: an engine that accepts
// connections and never answers costs that long, not a start's timeout.
func (m *Multi) next(tried map[*member]bool) (_ *member, suspect bool, _ error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, false, fmt.Errorf("engine: %w", engine.ErrClosed)
	}
	now := m.now()
	var best *member
	better := func(a, b *member) bool { // a before b; members in listed order
		aw, bw := a.retryAt.After(now), b.retryAt.After(now)
		switch {
		case aw != bw:
			return bw
		case aw:
			return a.retryAt.Before(b.retryAt)
		}
		return a.open < b.open
	}
	for _, mb := range m.members {
		if !tried[mb] && (best == nil || better(mb, best)) {
			best = mb
		}
	}
	if best == nil {
		return nil, false, nil
	}
	best.open++
	return best, best.failures > 0 || !best.answered, nil
}

// probe pings mb, not known to answer, within ProbeTimeout; a failed
// ping counts as a failure to reach it and gives mb's start back.
func (m *Multi) probe(ctx context.Context, mb *member) error {
	pctx, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
	err := mb.eng.Ping(pctx)
	cancel()
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %v: %w", m.opts.ProbeTimeout, err)
	}
	if err != nil {
		m.release(mb)
		if ctx.Err() == nil {
			m.unreachable(mb, err)
		}
		return err
	}
	m.reached(mb)
	return nil
}

// release gives back a start counted on mb.
func (m *Multi) release(mb *member) {
	m.mu.Lock()
	mb.open--
	m.mu.Unlock()
}

// unreachable records that mb could not be reached and backs off.
func (m *Multi) unreachable(mb *member, err error) {
	m.mu.Lock()
	mb.failures++
	wait := m.opts.MaxBackoff
	if mb.failures <= 30 {
		wait = min(firstBackoff<<(mb.failures-1), m.opts.MaxBackoff)
	}
	mb.retryAt = m.now().Add(wait)
	mb.lastErr = err
	failures := mb.failures
	m.mu.Unlock()
	m.log.Warn("engine unreachable; placing sandboxes on the others", "engine", mb.name,
		"failures", failures, "retry_in", wait, "err", err)
}

// reached records that mb answered.
func (m *Multi) reached(mb *member) {
	m.mu.Lock()
	was := mb.failures
	mb.failures, mb.retryAt, mb.lastErr, mb.answered = 0, time.Time{}, nil, true
	m.mu.Unlock()
	if was > 0 {
		m.log.Info("engine reachable again", "engine", mb.name, "after_failures", was)
	}
}

// Ping implements Pinger: it pings every engine at once and succeeds when
// one answers. The answers update which engines are backing off.
func (m *Multi) Ping(ctx context.Context) error {
	errs := make([]error, len(m.members))
	var wg sync.WaitGroup
	for i, mb := range m.members {
		wg.Go(func() {
			if err := mb.eng.Ping(ctx); err != nil {
				errs[i] = fmt.Errorf("%s: %w", mb.name, err)
				if ctx.Err() == nil {
					m.unreachable(mb, err)
				}
				return
			}
			m.reached(mb)
		})
	}
	wg.Wait()
	if slices.Contains(errs, nil) {
		return nil
	}
	return fmt.Errorf("%w: %w", engine.ErrNoEngine, errors.Join(errs...))
}

// Name returns the names of the engines, comma-separated.
func (m *Multi) Name() string {
	names := make([]string, len(m.members))
	for i, mb := range m.members {
		names[i] = mb.name
	}
	return strings.Join(names, ",")
}

// Engines reports the state of each engine, in the order listed.
func (m *Multi) Engines() []engine.EngineState {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]engine.EngineState, len(m.members))
	for i, mb := range m.members {
		out[i] = engine.EngineState{Name: mb.name, Up: mb.failures == 0, Sandboxes: mb.open}
		if mb.lastErr != nil {
			out[i].Error = mb.lastErr.Error()
		}
	}
	return out
}

// Close closes every engine; sandboxes must be closed first.
func (m *Multi) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	var errs []error
	for _, mb := range m.members {
		if err := mb.eng.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", mb.name, err))
		}
	}
	return errors.Join(errs...)
}

// A placedSandbox is a sandbox a Multi placed on one of its engines; its
// Close gives the place back.
type placedSandbox struct {
	engine.Sandbox
	m    *Multi
	mb   *member
	once sync.Once
}

// Engine names the engine the sandbox runs on.
func (p *placedSandbox) Engine() string { return p.mb.name }

// Close implements Sandbox.
func (p *placedSandbox) Close() error {
	err := p.Sandbox.Close()
	p.once.Do(func() { p.m.release(p.mb) })
	return err
}

// Detach leaves the sandbox running, detached (see Detacher).
func (p *placedSandbox) Detach() error {
	defer p.once.Do(func() { p.m.release(p.mb) })
	if d, ok := p.Sandbox.(engine.Detacher); ok {
		return d.Detach()
	}
	return p.Sandbox.Close()
}

// OpenFile implements Files.
func (p *placedSandbox) OpenFile(ctx context.Context, root, rel string, max int64) (io.ReadCloser, int64, error) {
	return openFileOf(ctx, p.Sandbox, root, rel, max)
}

// CopyIn implements Files.
func (p *placedSandbox) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	return copyInOf(ctx, p.Sandbox, dir, r)
}

// openFileOf is Files.OpenFile of sb, a wrapped sandbox.
func openFileOf(ctx context.Context, sb engine.Sandbox, root, rel string, max int64) (io.ReadCloser, int64, error) {
	f, ok := sb.(engine.Files)
	if !ok {
		return nil, 0, fmt.Errorf("opening %s: the sandbox's engine has no file access", rel)
	}
	return f.OpenFile(ctx, root, rel, max)
}

// copyInOf is Files.CopyIn of sb, a wrapped sandbox.
func copyInOf(ctx context.Context, sb engine.Sandbox, dir string, r io.Reader) error {
	f, ok := sb.(engine.Files)
	if !ok {
		return fmt.Errorf("copying into %s: the sandbox's engine has no file access", dir)
	}
	return f.CopyIn(ctx, dir, r)
}

var (
	_ engine.Router       = (*Multi)(nil)
	_ engine.Pinger       = (*Multi)(nil)
	_ engine.Sweeper      = (*Multi)(nil)
	_ engine.EngineStater = (*Multi)(nil)
	_ engine.Files        = (*placedSandbox)(nil)
)

// member returns the member called name, or an error wrapping
// ErrOtherEngine.
func (m *Multi) member(name string) (*member, error) {
	for _, mb := range m.members {
		if mb.name == name {
			return mb, nil
		}
	}
	return nil, fmt.Errorf("%w: %q is not an entry of MCP_BRIDGE_ENGINES", engine.ErrOtherEngine, name)
}

// Route implements engine.Router: the member called name.
func (m *Multi) Route(name string) (engine.Engine, error) {
	mb, err := m.member(name)
	if err != nil {
		return nil, err
	}
	return mb.eng, nil
}

// SweepExited implements Sweeper on every member that answers.
func (m *Multi) SweepExited(ctx context.Context, keyID string) (int, error) {
	total := 0
	var errs []error
	for _, mb := range m.members {
		s, err := engine.As[engine.Sweeper](ctx, mb.eng)
		if errors.Is(err, errors.ErrUnsupported) {
			continue
		}
		n := 0
		if err == nil {
			n, err = s.SweepExited(ctx, keyID)
		}
		total += n
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", mb.name, err))
		}
	}
	return total, errors.Join(errs...)
}

// InputFilled implements InputFiller.
func (p *placedSandbox) InputFilled() bool { return engine.InputFilled(p.Sandbox) }
