//go:build remote

package podman

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/containers/podman/v5/libpod/define"
	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/containers"
	"golang.org/x/sys/unix"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// A podmanContainer is the Podman half of a lifecycle.Sandbox: the calls on
// one container, its attached connection and its OOM watch.
type podmanContainer struct {
	p  *Podman
	id string

	stdin        *io.PipeWriter     // set once attaching began
	attachCancel context.CancelFunc // ends the attach
	closeSockets func()             // closes the attach connection's sockets
	oom          *oomWatch          // nil when the cgroup cannot be watched
}

// Ops implements lifecycle.API.
func (p *Podman) Ops(id string) lifecycle.Ops { return &podmanContainer{p: p, id: id} }

// Attach implements lifecycle.Ops.
func (c *podmanContainer) Attach(ctx context.Context, stdout, stderr *lifecycle.Pipe) (io.WriteCloser, <-chan struct{}, error) {
	// Attach swaps the transport of the connection it is given, so each
	// sandbox attaches over a connection of its own.
	conn, err := podmanConnect(ctx, c.p.ep)
	if err != nil {
		return nil, nil, err
	}
	stdinR, stdin := io.Pipe()
	c.stdin = stdin
	c.closeSockets = trackDials(conn)
	actx, cancel := context.WithCancel(context.Background())
	c.attachCancel = cancel
	ready := make(chan bool, 1)
	done := make(chan struct{})
	var attachErr error // set before done is closed
	go func() {
		defer close(done)
		// The ping of podmanConnect left a keep-alive connection in the
		// pool of conn, which only this sandbox uses.
		defer closeIdle(conn)
		defer c.closeSockets()
		err := containers.Attach(mergeValues(actx, conn), c.id, stdinR, stdout, stderr, ready, nil)
		attachErr = err
		stdout.CloseWithError(err)
		stderr.CloseWithError(err)
	}()
	select {
	case <-ready:
		return stdin, done, nil
	case <-done:
		return stdin, done, fmt.Errorf("%v", attachErr)
	case <-ctx.Done():
		return stdin, done, ctx.Err()
	}
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

// Start implements lifecycle.Ops.
func (c *podmanContainer) Start(ctx context.Context) error {
	return containers.Start(c.p.ctx(ctx), c.id, nil)
}

// WatchMemory implements lifecycle.MemoryWatcher: it starts an oomWatch when the
// engine is local and uses cgroup v1; see oomWatch for why.
func (c *podmanContainer) WatchMemory(ctx context.Context) {
	if !strings.HasPrefix(c.p.ep.URI, "unix://") {
		return
	}
	if _, err := os.Stat(memoryCgroupV1); err != nil {
		return
	}
	info, err := containers.Inspect(c.p.ctx(ctx), c.id, nil)
	if err != nil || info.State == nil {
		return
	}
	w, err := watchOOM(info.State.CgroupPath)
	if err != nil {
		c.p.e.Log.Debug("not watching for OOM kills", "id", lifecycle.ShortID(c.id), "err", err)
		return
	}
	c.oom = w
}

// Wait implements lifecycle.Ops.
func (c *podmanContainer) Wait(ctx context.Context) (engine.ExitStatus, error) {
	if c.oom != nil {
		defer c.oom.Close()
	}
	code, err := containers.Wait(c.p.ctx(ctx), c.id, new(containers.WaitOptions).
		WithCondition([]define.ContainerStatus{define.ContainerStateExited, define.ContainerStateStopped}))
	if err != nil {
		return engine.ExitStatus{}, err
	}
	st := engine.ExitStatus{Code: int(code)}
	ictx, cancel := lifecycle.CleanupContext(lifecycle.InspectTimeout)
	defer cancel()
	info, err := containers.Inspect(c.p.ctx(ictx), c.id, nil)
	if err == nil && info.State != nil {
		st.OOMKilled = info.State.OOMKilled
		if info.State.Error != "" {
			st.EngineError = info.State.Error
		}
	}
	if c.oom != nil && c.oom.OOM() {
		st.OOMKilled = true
	}
	return st, nil
}

// Detach implements lifecycle.Ops.
func (c *podmanContainer) Detach() {
	if c.stdin != nil {
		c.stdin.Close()
	}
	if c.attachCancel != nil {
		c.attachCancel()
	}
	if c.closeSockets != nil {
		c.closeSockets()
	}
}

// Signal implements lifecycle.Ops.
func (c *podmanContainer) Signal(ctx context.Context, sig syscall.Signal) error {
	return containers.Kill(c.p.ctx(ctx), c.id, new(containers.KillOptions).WithSignal(unix.SignalName(sig)))
}
