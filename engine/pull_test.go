package engine

import (
	"fmt"
	"testing"
)

func TestPullProgressString(t *testing.T) {
	for _, c := range []struct {
		p    PullProgress
		want string
		frac float64
	}{
		{PullProgress{Image: "python:3.14-slim"}, "pulling python:3.14-slim", 0},
		{PullProgress{Image: "i", Layers: 4, LayersDone: 1}, "pulling i: 1 of 4 layers", 0.25},
		{PullProgress{Image: "i", Layers: 7, LayersDone: 3, Bytes: 45_200_000, Total: 120_000_000}, "pulling i: 3 of 7 layers, 45.2 of 120.0 MB", 45.2 / 120},
		{PullProgress{Image: "i", Layers: 7, LayersDone: 7, Done: true}, "pulled i", 1},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
		if got := c.p.Fraction(); fmt.Sprintf("%.4f", got) != fmt.Sprintf("%.4f", c.frac) {
			t.Errorf("%+v: Fraction %v, want %v", c.p, got, c.frac)
		}
	}
}

// TestLayerTallyBounded: a stream naming more layers than any image has
// is counted up to maxLayers; a layer done after bytes counts whole.
func TestLayerTallyBounded(t *testing.T) {
	tally := NewLayerTally("i")
	for i := range maxLayers + 50 {
		tally.Seen(fmt.Sprint(i))
	}
	if p := tally.Progress(); p.Layers != maxLayers {
		t.Fatalf("%d layers kept, want at most %d", p.Layers, maxLayers)
	}
	tally = NewLayerTally("i")
	tally.Bytes("a", 10, 100)
	tally.Bytes("a", -1, 100)
	tally.Done("a")
	if p := tally.Progress(); p.Bytes != 100 || p.Total != 100 || p.LayersDone != 1 {
		t.Fatalf("%+v, want the done layer's bytes whole", p)
	}
}
