package entrypoint

import (
	"errors"
	"testing"
)

// TestSleepClaimFrames: the runtime's answer to a sleep claim carries
// ok; one without is a violation, and an answer nobody asked for past
// the one a claim may find waiting is too.
func TestSleepClaimFrames(t *testing.T) {
	for line, want := range map[string]bool{`{"t":"sleep_claimed","ok":true}`: true, `{"t":"sleep_claimed","ok":false}`: false} {
		f, err := parseFrame([]byte(line))
		if err != nil || f.Granted != want {
			t.Errorf("%s: %+v %v", line, f, err)
		}
	}
	for _, line := range []string{`{"t":"sleep_claimed"}`, `{"t":"sleep_claimed","ok":"yes"}`} {
		if _, err := parseFrame([]byte(line)); !errors.Is(err, errProtocol) {
			t.Errorf("%s: %v, want a violation", line, err)
		}
	}
	ctr := &container{claims: make(chan bool, 1), dead: make(chan struct{})}
	f := frame{T: frameSleepClaimed, Granted: true}
	if err := ctr.dispatch(f, new(bool), nil); err != nil {
		t.Fatalf("the first answer: %v", err)
	}
	if err := ctr.dispatch(f, new(bool), nil); !errors.Is(err, errProtocol) {
		t.Errorf("an answer nobody asked for: %v, want a violation", err)
	}
	close(ctr.dead)
	if ok := <-ctr.claims; !ok {
		t.Error("the first answer was lost")
	}
}
