package entrypoint

import (
	"errors"
	"fmt"
	"sync"
)

// The bytes of RPC payloads a bridge holds while their RPCs run (a tool
// call waiting for a person's confirmation holds its arguments for as
// long as the person takes) are bounded per sandbox and per bridge: an
// RPC whose payload would take its sandbox past its share, or the bridge
// past its total, is answered at once with ErrRPCBudget's error, which
// the code sees as an MCPError, and never reaches the handler. Payloads
// of at most SmallRPCBytes are not counted (64 of them in flight is at
// most 4 MiB a sandbox), so that a sandbox's small requests go on while
// others hold the budget.

// Defaults of RPCBudget.
const (
	DefaultRPCBytes           = 256 << 20
	DefaultRPCBytesPerSandbox = 32 << 20
	SmallRPCBytes             = 64 << 10
)

// ErrRPCBudget refuses an RPC whose payload passes its sandbox's share or
// the bridge's total of RPC bytes in flight.
var ErrRPCBudget = errors.New("RPC payloads in flight over the bridge's bound")

// An RPCBudget bounds the RPC payload bytes held at once by the sessions
// that share it (Options.RPCBudget): one a bridge. A nil *RPCBudget is
// the defaults, per session.
type RPCBudget struct {
	total, perSandbox int64
	mu                sync.Mutex
	held              int64
}

// NewRPCBudget returns a budget of total bytes in all, perSandbox bytes
// for one sandbox; zero or negative: DefaultRPCBytes,
// DefaultRPCBytesPerSandbox. perSandbox is raised to hold one frame's
// payload and lowered to total.
func NewRPCBudget(total, perSandbox int64) *RPCBudget {
	if total <= 0 {
		total = DefaultRPCBytes
	}
	if perSandbox <= 0 {
		perSandbox = DefaultRPCBytesPerSandbox
	}
	perSandbox = min(max(perSandbox, maxFrameBytes), max(total, maxFrameBytes))
	return &RPCBudget{total: max(total, perSandbox), perSandbox: perSandbox}
}

// A sandboxBudget is one sandbox's part of an RPCBudget.
type sandboxBudget struct {
	b    *RPCBudget
	mu   sync.Mutex
	held int64
}

func (b *RPCBudget) forSandbox() *sandboxBudget {
	if b == nil {
		b = NewRPCBudget(0, 0)
	}
	return &sandboxBudget{b: b}
}

// take counts n bytes of a payload in flight, or refuses them with an
// error wrapping ErrRPCBudget that says which bound; the caller gives
// them back with give once the RPC ended. Small payloads are not counted
// (taken reports whether n was).
func (s *sandboxBudget) take(n int64) (taken bool, err error) {
	if n <= SmallRPCBytes {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held+n > s.b.perSandbox {
		return false, fmt.Errorf("%w: this sandbox's RPCs in flight hold %d bytes, and %d more would pass its share of %d; "+
			"wait for them to end, or send less at once", ErrRPCBudget, s.held, n, s.b.perSandbox)
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if s.b.held+n > s.b.total {
		return false, fmt.Errorf("%w: the bridge holds %d bytes of RPCs in flight, and %d more would pass its %d; try again shortly",
			ErrRPCBudget, s.b.held, n, s.b.total)
	}
	s.held += n
	s.b.held += n
	return true, nil
}

// give returns n bytes that take counted.
func (s *sandboxBudget) give(n int64) {
	s.mu.Lock()
	s.held -= n
	s.mu.Unlock()
	s.b.mu.Lock()
	s.b.held -= n
	s.b.mu.Unlock()
}

// Held returns the bytes counted now, for tests and metrics.
func (b *RPCBudget) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}
