package engine

import (
	"context"
	"fmt"
	"sync"
)

// A PullProgress is where a pull of a sandbox image stands: its layers
// and, where the engine says (Docker), their bytes. Podman reports each
// layer as it begins and ends, not its bytes: Total stays 0 there.
type PullProgress struct {
	// Image is the reference being pulled.
	Image string
	// Layers is how many layers the pull has named so far; LayersDone how
	// many of them are present (pulled, or found already there).
	Layers, LayersDone int
	// Bytes of Total bytes of the layers the engine gave sizes for were
	// downloaded; Total is 0 when no size is known yet.
	Bytes, Total int64
	// Done is set on the last report of a pull that succeeded.
	Done bool
}

// Fraction is how far the pull is, 0 to 1: by bytes when sizes are known,
// else by layers; 0 before any layer is known.
func (p PullProgress) Fraction() float64 {
	switch {
	case p.Done:
		return 1
	case p.Total > 0:
		return min(1, float64(p.Bytes)/float64(p.Total))
	case p.Layers > 0:
		return float64(p.LayersDone) / float64(p.Layers)
	}
	return 0
}

// String says it for a person: "pulling python:3.14-slim: 3 of 7 layers,
// 45.2 of 120.0 MB".
func (p PullProgress) String() string {
	if p.Done {
		return fmt.Sprintf("pulled %s", p.Image)
	}
	s := fmt.Sprintf("pulling %s", p.Image)
	if p.Layers > 0 {
		s += fmt.Sprintf(": %d of %d layers", p.LayersDone, p.Layers)
	}
	if p.Total > 0 {
		s += fmt.Sprintf(", %.1f of %.1f MB", float64(p.Bytes)/1e6, float64(p.Total)/1e6)
	}
	return s
}

// A PullWatcher receives a pull's reports as they come; it must not
// block.
type PullWatcher func(PullProgress)

type pullWatcherKey struct{}

// WithPullWatcher returns ctx carrying w: a sandbox start (or an image
// pull) with it reports the progress of the image pull it waits for, if
// any, to w.
func WithPullWatcher(ctx context.Context, w PullWatcher) context.Context {
	return context.WithValue(ctx, pullWatcherKey{}, w)
}

// PullWatcherOf returns ctx's PullWatcher, or nil.
func PullWatcherOf(ctx context.Context) PullWatcher {
	w, _ := ctx.Value(pullWatcherKey{}).(PullWatcher)
	return w
}

// A LayerTally adds up an engine's per-layer pull messages into a
// PullProgress. Its methods are safe for concurrent use.
type LayerTally struct {
	mu     sync.Mutex
	image  string
	layers map[string]*layerState
}

// layerState is one layer's part of a LayerTally.
type layerState struct {
	current, total int64
	done           bool
}

// NewLayerTally returns an empty tally for a pull of image.
func NewLayerTally(image string) *LayerTally {
	return &LayerTally{image: image, layers: map[string]*layerState{}}
}

// maxLayers bounds what a tally keeps of an engine's messages: an image
// has tens of layers; more names than this are not counted.
const maxLayers = 1024

// layer returns id's state, nil when the tally is full.
func (t *LayerTally) layer(id string) *layerState {
	l, ok := t.layers[id]
	if !ok {
		if len(t.layers) >= maxLayers {
			return nil
		}
		l = &layerState{}
		t.layers[id] = l
	}
	return l
}

// Seen records layer id as part of the pull.
func (t *LayerTally) Seen(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.layer(id)
}

// Bytes records that current of total bytes of layer id are downloaded
// (values out of range are ignored).
func (t *LayerTally) Bytes(id string, current, total int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.layer(id); l != nil && total > 0 && current >= 0 && current <= total {
		l.current, l.total = current, total
	}
}

// Done records layer id as present.
func (t *LayerTally) Done(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.layer(id); l != nil {
		l.done = true
		if l.total > 0 {
			l.current = l.total
		}
	}
}

// Progress returns the pull's progress so far.
func (t *LayerTally) Progress() PullProgress {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := PullProgress{Image: t.image, Layers: len(t.layers)}
	for _, l := range t.layers {
		if l.done {
			p.LayersDone++
		}
		p.Bytes += l.current
		p.Total += l.total
	}
	return p
}
