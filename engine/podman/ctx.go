//go:build remote

package podman

import "context"

// A mergedCtx has the deadline and cancellation of its Context and, where
// that has no value for a key, the values of values.
type mergedCtx struct {
	context.Context
	values context.Context
}

func (c mergedCtx) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}

// mergeValues returns ctx with the values of values added: the Podman
// bindings find their connection among a context's values.
func mergeValues(ctx, values context.Context) context.Context { return mergedCtx{ctx, values} }
