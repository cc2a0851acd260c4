package engine

import (
	"context"
	"fmt"
)

// A Pinger is an Engine that can tell cheaply whether its container engine
// answers, as a health check asks.
type Pinger interface {
	// Ping reports whether the engine answers within ctx.
	Ping(ctx context.Context) error
}

// Ping implements Pinger: it pings the Docker daemon.
func (d *Docker) Ping(ctx context.Context) error {
	if _, err := d.api.Ping(ctx); err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	return nil
}

// Ping implements Pinger: it connects the backend when none is connected
// yet (as the first Start would), then pings it.
func (a *Auto) Ping(ctx context.Context) error {
	b, err := a.backend(ctx)
	if err != nil {
		return err
	}
	if p, ok := b.(Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// Name returns the name of the connected backend, or "auto" before one is
// connected.
func (a *Auto) Name() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.b == nil {
		return "auto"
	}
	return a.b.Name()
}

var (
	_ Pinger = (*Auto)(nil)
	_ Pinger = (*Docker)(nil)
	_ Pinger = (*Podman)(nil)
)
