package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// Start implements engine.Engine.Start for a backend.
func (e *Engine) Start(ctx context.Context, spec engine.Spec) (_ engine.Sandbox, err error) {
	defer func() {
		if err != nil && e.api.ConnFailed(err) {
			err = fmt.Errorf("%w: %s at %s: %w", engine.ErrNoEngine, e.name, e.Addr, err)
		}
	}()
	spec = spec.WithDefaults()
	if len(spec.Cmd) == 0 {
		return nil, errors.New("starting sandbox: spec has no command")
	}
	e.left.retry(ctx, e.Log, e.name, e.api.Remove)
	limits := e.probeLimits()
	began := time.Now()
	if err := e.ensureImage(ctx, spec.Image); err != nil {
		return nil, err
	}
	Trace(ctx, engine.PhaseImage, began)
	began = time.Now()
	// An engine completes a create whose request was cancelled midway,
	// leaving a container no one knows of: the create is not cancelled,
	// and its container is removed when the caller gave up meanwhile.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CreateTimeout)
	id, err := e.api.Create(cctx, spec, e.Owner, ContainerName(spec.Session))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("creating container: %w", err)
	}
	Trace(ctx, engine.PhaseCreate, began)
	sb := newContainerSandbox(e, id, spec.MemoryBytes)
	if err := ctx.Err(); err != nil {
		sb.Close()
		return nil, fmt.Errorf("creating container: %w", err)
	}
	if err := e.api.Verify(ctx, id, spec); err != nil {
		sb.Close()
		return nil, err
	}
	if err := e.checkLimits(ctx, limits); err != nil {
		sb.Close()
		return nil, err
	}
	if err := e.fillInput(ctx, sb, spec); err != nil {
		sb.Close()
		return nil, err
	}
	if err := sb.attachAndStart(ctx); err != nil {
		sb.Close()
		return nil, err
	}
	return sb, nil
}

// EnsureImage makes sure the image ref is present on the engine, pulling
// it when missing, as a start does: a bridge calls it when it starts, so
// the first call finds the image, or the pull under way, whose progress
// it is told (engine.WithPullWatcher).
func (e *Engine) EnsureImage(ctx context.Context, ref string) error {
	return e.ensureImage(ctx, ref)
}

// ensureImage makes sure ref is present, pulling it when missing. A pull
// under way (another start's, EnsureImage's) is joined, not repeated;
// ctx's PullWatcher hears its progress. The pull runs apart from ctx,
// bounded by PullTimeout: a start that gives up leaves it to the others;
// Close ends it.
func (e *Engine) ensureImage(ctx context.Context, ref string) error {
	if _, ok := e.images.Load(ref); ok {
		return nil
	}
	p, leave := e.pulls.join(ref, engine.PullWatcherOf(ctx), func(p *pull) {
		pctx, cancel := context.WithTimeout(e.pulls.base(), PullTimeout)
		defer cancel()
		p.err = e.pullIfMissing(engine.WithPullWatcher(pctx, p.report), ref)
		if p.err == nil {
			e.images.Store(ref, struct{}{})
		}
	})
	defer leave()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return fmt.Errorf("waiting for image %q: %w", ref, ctx.Err())
	}
}

// pullIfMissing pulls ref unless the engine has it.
func (e *Engine) pullIfMissing(ctx context.Context, ref string) error {
	ok, err := e.api.HasImage(ctx, ref)
	if err != nil {
		return fmt.Errorf("inspecting image %q: %w", ref, err)
	}
	if ok {
		return nil
	}
	e.Log.Info("pulling sandbox image", "image", ref, "engine", e.name)
	began := time.Now()
	if err := e.api.PullImage(ctx, ref); err != nil {
		return pullError(ref, err)
	}
	if w := engine.PullWatcherOf(ctx); w != nil {
		w(engine.PullProgress{Image: ref, Done: true})
	}
	e.Log.Info("pulled sandbox image", "image", ref, "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// pullError wraps a failed pull with the image and the setting to change.
func pullError(ref string, err error) error {
	return fmt.Errorf("%w: image %q is not present and pulling it failed (set %s to an image the engine has): %v",
		engine.ErrImage, ref, "MCP_BRIDGE_IMAGE", err)
}
