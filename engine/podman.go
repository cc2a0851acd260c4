//go:build remote

package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containers/podman/v5/libpod/define"
	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/bindings/images"
	"github.com/containers/podman/v5/pkg/errorhandling"
	"golang.org/x/sys/unix"
)

// A Podman is an Engine on Podman's REST API through its Go bindings.
type Podman struct {
	uri    string
	conn   context.Context // carries the bindings connection
	svc    *podmanService  // the service we started, if any
	log    *slog.Logger
	owner  Owner
	grace  time.Duration
	images sync.Map
	// left holds the containers whose removal failed, tried again at
	// every Start and at Close.
	left leftovers
}

// NewPodman connects to a Podman service (see PodmanOptions.URI for the
// order tried), starting one when none listens and the podman binary is
// installed, and removes containers left behind by dead bridge processes.
func NewPodman(ctx context.Context, opts *PodmanOptions) (*Podman, error) {
	if opts == nil {
		opts = &PodmanOptions{}
	}
	log := loggerOrDiscard(opts.Logger)
	routeBindingsLogs(log)
	candidates := []string{opts.URI}
	if opts.URI == "" {
		candidates = podmanSocketCandidates(os.Getenv, os.Geteuid())
	}
	var tried []string
	for _, uri := range candidates {
		if !unixSocketAnswers(uri) {
			tried = append(tried, uri+": no service listening")
			continue
		}
		conn, err := podmanConnect(ctx, uri)
		if err != nil {
			tried = append(tried, uri+": "+err.Error())
			continue
		}
		return newPodman(ctx, conn, uri, nil, opts, log), nil
	}
	if opts.URI == "" && os.Getenv("CONTAINER_HOST") == "" {
		svc, err := startPodmanService(ctx, log)
		if err != nil {
			tried = append(tried, err.Error())
		} else {
			conn, err := podmanConnect(ctx, svc.URI)
			if err == nil {
				return newPodman(ctx, conn, svc.URI, svc, opts, log), nil
			}
			svc.Close()
			tried = append(tried, svc.URI+": "+err.Error())
		}
	}
	return nil, fmt.Errorf("podman: %s", strings.Join(tried, "; "))
}

func newPodman(ctx context.Context, conn context.Context, uri string, svc *podmanService, opts *PodmanOptions, log *slog.Logger) *Podman {
	p := &Podman{uri: uri, conn: conn, svc: svc, log: log, owner: Self(), grace: opts.StopGrace}
	if p.grace <= 0 {
		p.grace = DefaultStopGrace
	}
	// The API version the ping reported: system.Version would cost 0.4 s
	// here (the service gathers the versions of conmon, runtimes, …).
	log.Info("connected to podman", "uri", uri, "api", bindings.ServiceVersion(conn).String())
	p.removeOrphans(ctx)
	return p
}

// podmanConnect opens a bindings connection to uri and pings it.
func podmanConnect(ctx context.Context, uri string) (context.Context, error) {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := bindings.NewConnection(pctx, uri)
	if err != nil {
		return nil, err
	}
	// Keep only the connection value: the ping's deadline must not bound
	// later calls.
	return valuesOnly{conn}, nil
}

// Name returns "podman".
func (p *Podman) Name() string { return BackendPodman }

// Close tries once more to remove the containers whose removal failed and
// stops the service the bridge started, if any.
func (p *Podman) Close() error {
	if p.left.len() > 0 {
		ctx, cancel := cleanupContext(cleanupTimeout)
		p.left.retry(ctx, p.log, BackendPodman, p.removeContainer)
		cancel()
	}
	if p.svc != nil {
		return p.svc.Close()
	}
	return nil
}

// ctx returns a context with ctx's deadline and cancellation and the
// bindings connection's values.
func (p *Podman) ctx(ctx context.Context) context.Context { return mergeValues(ctx, p.conn) }

// Start implements Engine.
func (p *Podman) Start(ctx context.Context, spec Spec) (_ Sandbox, err error) {
	defer func() {
		if err != nil && dialFailed(err) {
			err = fmt.Errorf("%w: podman at %s: %w", ErrNoEngine, p.uri, err)
		}
	}()
	spec = spec.withDefaults()
	if len(spec.Cmd) == 0 {
		return nil, errors.New("starting sandbox: spec has no command")
	}
	p.left.retry(ctx, p.log, BackendPodman, p.removeContainer)
	began := time.Now()
	if err := p.ensureImage(ctx, spec.Image); err != nil {
		return nil, err
	}
	tracePhase(ctx, PhaseImage, began)
	began = time.Now()
	g := podmanSpec(spec, p.owner)
	g.Name = containerName(spec.Session)
	created, err := containers.CreateWithSpec(p.ctx(ctx), g, nil)
	if err != nil {
		return nil, fmt.Errorf("creating container: %w", err)
	}
	tracePhase(ctx, PhaseCreate, began)
	sb := newPodmanSandbox(p, created.ID, spec.MemoryBytes)
	if spec.OCIRuntime != "" {
		began = time.Now()
		if err := p.checkRuntime(ctx, created.ID, spec.OCIRuntime); err != nil {
			sb.Close()
			return nil, err
		}
		tracePhase(ctx, PhaseCheck, began)
	}
	if err := sb.attachAndStart(ctx); err != nil {
		sb.Close()
		return nil, err
	}
	return sb, nil
}

// checkRuntime verifies that the container got the OCI runtime asked for:
// a service may ignore the request, and a sandbox silently run under a
// weaker runtime than configured is worse than none.
func (p *Podman) checkRuntime(ctx context.Context, id, want string) error {
	if want == "" {
		return nil
	}
	info, err := containers.Inspect(p.ctx(ctx), id, nil)
	if err != nil {
		return fmt.Errorf("inspecting container %s: %w", shortID(id), err)
	}
	if got := filepath.Base(info.OCIRuntime); got != want {
		return fmt.Errorf("%s=%q: the podman service created the container with runtime %q instead; "+
			"set the runtime in the service's containers.conf ([engine] runtime) or use docker", "MCP_BRIDGE_OCI_RUNTIME", want, got)
	}
	return nil
}

func (p *Podman) ensureImage(ctx context.Context, ref string) error {
	if _, ok := p.images.Load(ref); ok {
		return nil
	}
	ok, err := images.Exists(p.ctx(ctx), ref, nil)
	if err != nil {
		return fmt.Errorf("inspecting image %q: %w", ref, err)
	}
	if !ok {
		p.log.Info("pulling sandbox image", "image", ref, "engine", "podman")
		w := &logWriter{log: p.log, msg: "pull progress", attrs: []any{"image", ref}}
		if _, err := images.Pull(p.ctx(ctx), ref, new(images.PullOptions).WithQuiet(false).WithProgressWriter(w)); err != nil {
			return pullError(ref, err)
		}
		p.log.Info("pulled sandbox image", "image", ref)
	}
	p.images.Store(ref, struct{}{})
	return nil
}

// List returns the containers of every bridge process on this engine.
func (p *Podman) List(ctx context.Context) ([]SandboxInfo, error) {
	list, err := containers.List(p.ctx(ctx), new(containers.ListOptions).WithAll(true).
		WithFilters(map[string][]string{"label": {LabelBridge + "=1"}}))
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	out := make([]SandboxInfo, 0, len(list))
	for _, c := range list {
		out = append(out, SandboxInfo{ID: c.ID, Labels: c.Labels, State: c.State})
	}
	return out, nil
}

func (p *Podman) removeOrphans(ctx context.Context) {
	removeOrphans(ctx, p.log, BackendPodman, p.owner, p.List, p.removeContainer)
}

// removeContainer force-removes container id; one already gone is no
// error.
func (p *Podman) removeContainer(ctx context.Context, id string) error {
	_, err := containers.Remove(p.ctx(ctx), id, new(containers.RemoveOptions).WithForce(true).WithVolumes(true))
	if podmanNotFound(err) {
		return nil
	}
	return err
}

// podmanNotFound reports whether err is the service's "no such container".
func podmanNotFound(err error) bool {
	var em *errorhandling.ErrorModel
	return errors.As(err, &em) && em.Code() == http.StatusNotFound
}

// A podmanSandbox is a Sandbox backed by a Podman container.
type podmanSandbox struct {
	p        *Podman
	id       string
	memLimit int64

	stdinR         *io.PipeReader
	stdin          *io.PipeWriter
	stdout, stderr *boundedPipe
	attachCancel   context.CancelFunc
	attachDone     chan struct{} // closed when attachErr is set
	attachErr      error
	closeSockets   func() // closes the attach connection's sockets; nil before attaching

	oom         *oomWatch // nil when the cgroup cannot be watched
	watchCtx    context.Context
	watchCancel context.CancelFunc
	done        chan struct{}
	// started holds the done channels of the goroutines started so far
	// (attach, watch), which Close waits for.
	started []chan struct{}
	status  ExitStatus
	waitErr error

	closeOnce sync.Once
	closeErr  error
}

func newPodmanSandbox(p *Podman, id string, memLimit int64) *podmanSandbox {
	wctx, wcancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	return &podmanSandbox{
		p: p, id: id, memLimit: memLimit,
		stdinR: r, stdin: w,
		stdout:      newBoundedPipe(streamBufferBytes),
		stderr:      newBoundedPipe(streamBufferBytes),
		attachDone:  make(chan struct{}),
		watchCtx:    wctx,
		watchCancel: wcancel,
		done:        make(chan struct{}),
	}
}

func (s *podmanSandbox) attachAndStart(ctx context.Context) error {
	began := time.Now()
	// Attach swaps the transport of the connection it is given, so each
	// sandbox attaches over a connection of its own.
	conn, err := podmanConnect(ctx, s.p.uri)
	if err != nil {
		close(s.attachDone)
		return fmt.Errorf("attaching to container %s: %w", shortID(s.id), err)
	}
	s.closeSockets = trackDials(conn)
	actx, cancel := context.WithCancel(context.Background())
	s.attachCancel = cancel
	ready := make(chan bool, 1)
	s.started = append(s.started, s.attachDone)
	go func() {
		defer close(s.attachDone)
		// The ping of podmanConnect left a keep-alive connection in the
		// pool of conn, which only this sandbox uses.
		defer closeIdle(conn)
		defer s.closeSockets()
		err := containers.Attach(mergeValues(actx, conn), s.id, s.stdinR, s.stdout, s.stderr, ready, nil)
		s.attachErr = err
		s.stdout.CloseWithError(err)
		s.stderr.CloseWithError(err)
	}()
	select {
	case <-ready:
	case <-s.attachDone:
		return fmt.Errorf("attaching to container %s: %v", shortID(s.id), s.attachErr)
	case <-ctx.Done():
		return fmt.Errorf("attaching to container %s: %w", shortID(s.id), ctx.Err())
	}
	tracePhase(ctx, PhaseAttach, began)
	began = time.Now()
	if err := containers.Start(s.p.ctx(ctx), s.id, nil); err != nil {
		return fmt.Errorf("starting container %s: %w", shortID(s.id), err)
	}
	tracePhase(ctx, PhaseStart, began)
	began = time.Now()
	s.watchMemoryCgroup(ctx)
	tracePhase(ctx, PhaseWatch, began)
	s.started = append(s.started, s.done)
	go s.watch()
	return nil
}

// trackDials makes the transport of conn remember the connections it
// dials and returns a function closing them: containers.Attach never
// closes the socket it hijacks (containers/podman#25344), one descriptor
// per sandbox otherwise.
func trackDials(conn context.Context) (closeAll func()) {
	c, err := bindings.GetClient(conn)
	if err != nil {
		return func() {}
	}
	tr, ok := c.Client.Transport.(*http.Transport)
	if !ok || tr.DialContext == nil {
		return func() {}
	}
	var mu sync.Mutex
	var conns []net.Conn
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err == nil {
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
		}
		return nc, err
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range conns {
			nc.Close()
		}
		conns = nil
	}
}

// closeIdle closes the idle keep-alive connections of a bindings
// connection.
func closeIdle(conn context.Context) {
	if c, err := bindings.GetClient(conn); err == nil && c.Client != nil {
		c.Client.CloseIdleConnections()
	}
}

// watchMemoryCgroup starts an oomWatch when the engine is local and uses
// cgroup v1; see oomWatch for why.
func (s *podmanSandbox) watchMemoryCgroup(ctx context.Context) {
	if !strings.HasPrefix(s.p.uri, "unix://") {
		return
	}
	if _, err := os.Stat(memoryCgroupV1); err != nil {
		return
	}
	info, err := containers.Inspect(s.p.ctx(ctx), s.id, nil)
	if err != nil || info.State == nil {
		return
	}
	w, err := watchOOM(info.State.CgroupPath)
	if err != nil {
		s.p.log.Debug("not watching for OOM kills", "id", shortID(s.id), "err", err)
		return
	}
	s.oom = w
}

func (s *podmanSandbox) watch() {
	defer close(s.done)
	if s.oom != nil {
		defer s.oom.Close()
	}
	code, err := containers.Wait(s.p.ctx(s.watchCtx), s.id, new(containers.WaitOptions).
		WithCondition([]define.ContainerStatus{define.ContainerStateExited, define.ContainerStateStopped}))
	if err != nil {
		s.waitErr = fmt.Errorf("waiting for container %s: %w", shortID(s.id), err)
		return
	}
	s.status = ExitStatus{Code: int(code), MemoryLimit: s.memLimit}
	ctx, cancel := cleanupContext(inspectTimeout)
	defer cancel()
	info, err := containers.Inspect(s.p.ctx(ctx), s.id, nil)
	if err == nil && info.State != nil {
		s.status.OOMKilled = info.State.OOMKilled
		if info.State.Error != "" {
			s.status.EngineError = info.State.Error
		}
	}
	if s.oom != nil && s.oom.OOM() {
		s.status.OOMKilled = true
	}
}

func (s *podmanSandbox) ID() string            { return s.id }
func (s *podmanSandbox) Stdin() io.WriteCloser { return s.stdin }
func (s *podmanSandbox) Stdout() io.Reader     { return s.stdout }
func (s *podmanSandbox) Stderr() io.Reader     { return s.stderr }

func (s *podmanSandbox) Signal(ctx context.Context, sig syscall.Signal) error {
	if err := containers.Kill(s.p.ctx(ctx), s.id, new(containers.KillOptions).WithSignal(unix.SignalName(sig))); err != nil {
		return fmt.Errorf("signalling container %s: %w", shortID(s.id), err)
	}
	return nil
}

func (s *podmanSandbox) Wait(ctx context.Context) (ExitStatus, error) {
	select {
	case <-s.done:
		return s.status, s.waitErr
	case <-ctx.Done():
		return ExitStatus{}, ctx.Err()
	}
}

func (s *podmanSandbox) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := cleanupContext(s.p.grace + cleanupTimeout)
		defer cancel()
		var errs []error
		grace := uint(s.p.grace.Seconds() + 0.999)
		if err := containers.Stop(s.p.ctx(ctx), s.id, new(containers.StopOptions).WithTimeout(grace)); err != nil && !podmanNotFound(err) {
			errs = append(errs, fmt.Errorf("stopping container %s: %w", shortID(s.id), err))
		}
		if err := s.p.removeContainer(ctx, s.id); err != nil {
			errs = append(errs, fmt.Errorf("removing container %s: %w", shortID(s.id), err))
			s.p.left.add(s.id)
		}
		s.stdin.Close()
		if s.attachCancel != nil {
			s.attachCancel()
		}
		s.watchCancel()
		s.stdout.Close()
		s.stderr.Close()
		if s.closeSockets != nil {
			s.closeSockets()
		}
		// Nothing of this sandbox outlives Close: wait for its
		// goroutines, as long as the clean-up may take.
		for _, ch := range s.started {
			select {
			case <-ch:
			case <-ctx.Done():
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
