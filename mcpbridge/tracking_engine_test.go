package mcpbridge

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
)

// A trackingEngine is an enginetest.Local that counts the sandboxes it
// started and those still running (not yet closed), and may hold starts
// at a gate.
type trackingEngine struct {
	local enginetest.Local
	// gate, when set, holds every Start until it is closed; entered is
	// told of each Start that waits there.
	gate    chan struct{}
	entered chan struct{}

	mu      sync.Mutex
	started int
	live    int
}

func newTrackingEngine(t *testing.T) *trackingEngine {
	return &trackingEngine{local: enginetest.Local{T: t}}
}

// Start implements engine.Engine.
func (e *trackingEngine) Start(ctx context.Context, spec engine.Spec) (engine.Sandbox, error) {
	if e.gate != nil {
		e.entered <- struct{}{}
		select {
		case <-e.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	sb, err := e.local.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.started++
	e.live++
	n := e.started
	e.mu.Unlock()
	return &trackedSandbox{Sandbox: sb, e: e, id: fmt.Sprintf("local-%d", n)}, nil
}

// counts returns how many sandboxes started and how many still run.
func (e *trackingEngine) counts() (started, live int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started, e.live
}

type trackedSandbox struct {
	engine.Sandbox
	e    *trackingEngine
	id   string // unique among the engine's sandboxes, as a handle needs
	once sync.Once
}

// ID implements engine.Sandbox.
func (s *trackedSandbox) ID() string { return s.id }

// Close implements engine.Sandbox: the local process is gone when it
// returns.
func (s *trackedSandbox) Close() error {
	err := s.Sandbox.Close()
	s.once.Do(func() {
		s.e.mu.Lock()
		s.e.live--
		s.e.mu.Unlock()
	})
	return err
}
