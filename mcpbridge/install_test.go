package mcpbridge

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// fakeInstallClient records what the gate asks of the install client:
// each install's BeginCall, and the connections it serves (held until
// closed).
type fakeInstallClient struct {
	mu     sync.Mutex
	begins int
	served int
}

func (f *fakeInstallClient) BeginCall() { f.mu.Lock(); f.begins++; f.mu.Unlock() }

func (f *fakeInstallClient) Serve(c net.Conn) {
	f.mu.Lock()
	f.served++
	f.mu.Unlock()
	buf := make([]byte, 1)
	c.Read(buf) // until the gate closes it
}

// dialGate hands a connection to the gate's handler and reports whether
// it was served (left open) or closed at once.
func dialGate(t *testing.T, serve func(net.Conn)) (served bool, conn net.Conn) {
	t.Helper()
	code, gate := net.Pipe()
	go serve(gate)
	code.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := code.Read(make([]byte, 1))
	return isTimeout(err), code
}

// TestInstallGate: the install endpoint serves nothing before an install,
// serves while the call that asked for it runs, closes (its connections
// too) once the runtime reports each pip ended or the call ends, and
// never opens for a call that is not running; each install starts its own
// byte budget.
func TestInstallGate(t *testing.T) {
	fc := &fakeInstallClient{}
	var current any // the call running now
	g := newInstallGate(fc, func() any { return current })
	serve := g.serve
	if served, _ := dialGate(t, serve); served {
		t.Fatal("served before any install")
	}
	call := &callInfo{}
	current = call
	g.open(call)
	g.open(call) // two installs of one call
	if fc.begins != 2 {
		t.Errorf("%d byte budgets begun for 2 installs", fc.begins)
	}
	served, held := dialGate(t, serve)
	if !served {
		t.Fatal("not served during an install")
	}
	g.ended(call)
	if served, _ := dialGate(t, serve); !served {
		t.Fatal("closed while an install of the call still runs")
	}
	g.ended(call)
	if served, _ := dialGate(t, serve); served {
		t.Fatal("served once every pip ended")
	}
	// The connection opened during the install was closed with it.
	held.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := held.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("a connection of the install outlived it: %v", err)
	}

	// Never reported ended: the call's end closes it.
	g.open(call)
	g.end(call)
	if served, _ := dialGate(t, serve); served {
		t.Fatal("served after the call ended")
	}
	// Opened for a call that then is no longer the current one (code a
	// call left running): closed.
	g.open(call)
	current = &callInfo{}
	if served, _ := dialGate(t, serve); served {
		t.Fatal("served for a call that is not running")
	}
	g.end(&callInfo{}) // another call's end leaves it as it is
	g.close()
	var none *installGate
	none.end(call)
	none.close()
}

// isTimeout reports whether err is a deadline's: a read that timed out
// was on a connection still open.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestInstallOutsideCall: a runtime.install asked while no call of the
// session runs is refused, and opens nothing; a report of pip's end is
// answered whatever the state.
func TestInstallOutsideCall(t *testing.T) {
	b := New(enginetest.Local{T: t}, &Options{Registry: discovery.NewRegistry(discovery.Options{Home: t.TempDir(), Cwd: t.TempDir()})})
	t.Cleanup(func() { b.Close() })
	fc := &fakeInstallClient{}
	cs := &clientSession{}
	cs.install = newInstallGate(fc, func() any { return cs.current.Load() })
	if b.egress == nil {
		t.Skip("no egress gateway in this bridge")
	}
	if _, err := b.install(context.Background(), cs, "", []string{"x"}, true, false); !errors.Is(err, errInstallOutsideCall) {
		t.Errorf("an install outside a call: %v", err)
	}
	if fc.begins != 0 || cs.install.call != nil {
		t.Errorf("an install outside a call opened the endpoint")
	}
	if _, err := b.install(context.Background(), cs, "ended", nil, false, false); err != nil {
		t.Errorf("a report of pip's end outside a call: %v", err)
	}
	cs.current.Store(&callInfo{})
	if plan, err := b.install(context.Background(), cs, "", []string{"x"}, true, false); err != nil || plan == nil || fc.begins != 1 {
		t.Errorf("an install within a call: %v %v (%d budgets)", plan, err, fc.begins)
	}
}
