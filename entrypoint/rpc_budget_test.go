package entrypoint

import (
	"errors"
	"strings"
	"testing"
)

// TestRPCBudget: a sandbox holds at most its share, the bridge at most
// its total, small payloads are not counted, and what is given back can
// be taken again.
func TestRPCBudget(t *testing.T) {
	b := NewRPCBudget(48<<20, 32<<20)
	s1, s2, s3 := b.forSandbox(), b.forSandbox(), b.forSandbox()
	const mib12 = 12 << 20
	for i := range 2 {
		if taken, err := s1.take(mib12); !taken || err != nil {
			t.Fatalf("s1's RPC %d: %v %v", i, taken, err)
		}
	}
	if _, err := s1.take(mib12); !errors.Is(err, ErrRPCBudget) || !strings.Contains(err.Error(), "its share") {
		t.Fatalf("s1 past its share: %v", err)
	}
	if taken, err := s1.take(SmallRPCBytes); taken || err != nil {
		t.Fatalf("a small payload: %v %v", taken, err)
	}
	for i := range 2 {
		if taken, err := s2.take(mib12); !taken || err != nil {
			t.Fatalf("s2's RPC %d: %v %v", i, taken, err)
		}
	}
	if _, err := s3.take(mib12); !errors.Is(err, ErrRPCBudget) || !strings.Contains(err.Error(), "the bridge holds") {
		t.Fatalf("s3 past the bridge's total: %v", err)
	}
	if got := b.Held(); got != 4*mib12 {
		t.Fatalf("held %d", got)
	}
	s1.give(mib12)
	if taken, err := s3.take(mib12); !taken || err != nil {
		t.Fatalf("s3 once s1 gave one back: %v %v", taken, err)
	}
	if b := NewRPCBudget(1, 1); b.perSandbox != maxFrameBytes || b.total != maxFrameBytes {
		t.Errorf("a budget below one frame: %d %d", b.perSandbox, b.total)
	}
}
