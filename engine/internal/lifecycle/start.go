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

// ensureImage makes sure ref is present, pulling it when missing.
func (e *Engine) ensureImage(ctx context.Context, ref string) error {
	if _, ok := e.images.Load(ref); ok {
		return nil
	}
	ok, err := e.api.HasImage(ctx, ref)
	if err != nil {
		return fmt.Errorf("inspecting image %q: %w", ref, err)
	}
	if !ok {
		e.Log.Info("pulling sandbox image", "image", ref, "engine", e.name)
		if err := e.api.PullImage(ctx, ref); err != nil {
			return pullError(ref, err)
		}
		e.Log.Info("pulled sandbox image", "image", ref)
	}
	e.images.Store(ref, struct{}{})
	return nil
}

// pullError wraps a failed pull with the image and the setting to change.
func pullError(ref string, err error) error {
	return fmt.Errorf("%w: image %q is not present and pulling it failed (set %s to an image the engine has): %v",
		engine.ErrImage, ref, "MCP_BRIDGE_IMAGE", err)
}
