package mcpbridge

import (
	"context"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// sandboxImage is the image the bridge's sandboxes run.
func (b *Bridge) sandboxImage() string {
	return engine.Spec{Image: b.opts.Session.Spec.Image}.WithDefaults().Image
}

// imageEnsurer returns the bridge's engine as an engine.ImageEnsurer, or
// nil when it is none (Kubernetes: the kubelet pulls) or not reachable.
func (b *Bridge) imageEnsurer(ctx context.Context) engine.ImageEnsurer {
	if b.eng == nil || !engine.MayBe[engine.ImageEnsurer](b.eng) {
		return nil
	}
	ens, err := engine.As[engine.ImageEnsurer](ctx, b.eng)
	if err != nil {
		return nil
	}
	return ens
}

// PrepareImage makes sure the sandbox image is present, pulling it when
// missing, and returns when it is (or the pull failed, or ctx ended). A
// bridge's command calls it in the background as it starts, so that a
// client's first call finds the image, or joins the pull under way and
// is told how far it is. Engines that pull on their own (Kubernetes)
// return at once.
func (b *Bridge) PrepareImage(ctx context.Context) error {
	ens := b.imageEnsurer(ctx)
	if ens == nil {
		return nil
	}
	return ens.EnsureImage(ctx, b.sandboxImage())
}

// awaitImage waits for the sandbox image before a call starts its
// sandbox, with watch (nil: none) told how a pull under way goes: a
// client that follows the call sees what it waits for. Present, it costs
// a lookup. Its error is the pull's, which the call reports.
func (b *Bridge) awaitImage(ctx context.Context, watch engine.PullWatcher) error {
	ens := b.imageEnsurer(ctx)
	if ens == nil {
		return nil
	}
	if watch != nil {
		ctx = engine.WithPullWatcher(ctx, watch)
	}
	return ens.EnsureImage(ctx, b.sandboxImage())
}
