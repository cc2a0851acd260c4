package entrypoint

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// ErrStreamsLost is the notice of a call cut off where the sandbox's
// streams were lost and attached again (engine.ErrReattached): its output
// from then on is gone, and it was interrupted; the sandbox and the
// session's state are kept.
var ErrStreamsLost = errors.New("the connection to the sandbox was lost during the call and made again")

const (
	// frameSync asks the runtime to answer with frameSynced carrying the
	// same nonce: where the answer is read, the frames are whole again.
	frameSync   = "sync"
	frameSynced = "synced"
	// frameLost is the host's own: it ends a call cut off by a lost
	// stream (never read from a sandbox, whose frames are parsed).
	frameLost = "lost"
	// maxResyncBytes bounds what is skipped before the runtime's answer.
	maxResyncBytes = 64 << 20
)

// resync makes the frame stream whole again after the engine attached the
// sandbox's streams anew: bytes either way may have been lost, so a frame
// may be cut. The call in flight fails at once (its output is gone) and is
// interrupted; egress connections are severed. Blank lines end whatever
// part of a frame reached the runtime and fill a payload it may still wait
// for; then a sync frame with a fresh nonce goes out, and everything read
// before the runtime's answer is dropped. Frames of the cut-off call that
// come after it are dropped too (see settleAbandoned), until its result.
func (ctr *container) resync(r *bufio.Reader) error {
	for {
		lost := ctr.abandon()
		ctr.egress.sever()
		nonce := rand.Text()
		// The nonce is base32: it needs no escaping, and the runtime
		// writes its answer as compact JSON, members in this order.
		marker := []byte(`{"t":"` + frameSynced + `","n":"` + nonce + "\"}\n")
		sync := []byte(`{"t":"` + frameSync + `","n":"` + nonce + "\"}\n")
		go func() {
			// Blocks while no stream is attached; a dead sandbox fails it.
			ctr.sendRaw(append(bytes.Repeat([]byte{'\n'}, egressChunk+1), sync...))
		}()
		began := time.Now()
		err := skipTo(r, marker, maxResyncBytes)
		if errors.Is(err, engine.ErrReattached) {
			continue // cut again before the answer: once more
		}
		if err != nil {
			return fmt.Errorf("resynchronising the sandbox's frames: %w", err)
		}
		ctr.log.Warn("the sandbox's streams were lost and attached again; frames resynchronised",
			"call cut off", lost != "", "took", time.Since(began))
		return ctr.interruptCut(lost)
	}
}

// interruptCut interrupts the call cut off (lost; "": none), once the
// frames are whole again, and lets the next call wait for its end (see
// settle).
func (ctr *container) interruptCut(lost string) error {
	if lost != "" {
		if err := ctr.send(interruptFrame{T: frameInterrupt, ID: lost}); err != nil {
			return err
		}
	}
	ctr.mu.Lock()
	if ctr.abandoned != "" && !ctr.interrupted {
		ctr.interrupted = true
		close(ctr.resynced)
	}
	ctr.mu.Unlock()
	return nil
}

// abandon fails the call in flight with ErrStreamsLost and keeps its id,
// whose frames are dropped until its result (see settleAbandoned); it
// returns that id ("": no call ran).
func (ctr *container) abandon() string { return ctr.abandonAs(streamsLost) }

// The reasons a call is cut off, which its notice tells (frame.Data of
// a frameLost).
const (
	streamsLost = "streams"
	laneLost    = "lane"
)

// abandonAs is abandon for a call cut off for why (streamsLost, laneLost).
func (ctr *container) abandonAs(why string) string {
	ctr.mu.Lock()
	c := ctr.call
	ctr.call = nil
	if c != nil {
		if ctr.abandoned == "" {
			ctr.settled, ctr.resynced, ctr.interrupted = make(chan struct{}), make(chan struct{}), false
		}
		ctr.abandoned = c.id
	}
	id := ctr.abandoned
	ctr.mu.Unlock()
	if c != nil {
		c.result <- frame{T: frameLost, ID: c.id, Data: why}
	}
	return id
}

// settleAbandoned reports whether f belongs to the call cut off by a lost
// stream (and is to be dropped); its result (or busy) ends it.
func (ctr *container) settleAbandoned(f frame) bool {
	ctr.mu.Lock()
	defer ctr.mu.Unlock()
	if ctr.abandoned == "" || f.ID != ctr.abandoned || ctr.call != nil && ctr.call.id == f.ID {
		return false
	}
	if f.T == frameResult || f.T == frameBusy {
		ctr.abandoned = ""
		close(ctr.settled)
	}
	return true
}

// unsettled returns, while a call cut off by a lost stream has not ended
// in the sandbox, channels closed once the frames are whole again and it
// was interrupted, and once it ended; nil ones when there is none.
func (ctr *container) unsettled() (resynced, settled <-chan struct{}) {
	ctr.mu.Lock()
	defer ctr.mu.Unlock()
	if ctr.abandoned == "" {
		return nil, nil
	}
	return ctr.resynced, ctr.settled
}

// skipTo reads r up to and including the bytes of marker, which begins
// with a byte it holds nowhere else; at most max bytes are skipped.
func skipTo(r *bufio.Reader, marker []byte, max int) error {
	matched := 0
	for n := 0; matched < len(marker); n++ {
		if n > max {
			return fmt.Errorf("%w: no answer to the sync frame within %d bytes", errProtocol, max)
		}
		b, err := r.ReadByte()
		if err != nil {
			return err
		}
		switch {
		case b == marker[matched]:
			matched++
		case b == marker[0]:
			matched = 1
		default:
			matched = 0
		}
	}
	return nil
}

// settle waits, before a call is sent, for a call cut off by lost streams
// to end in the sandbox: first for the frames to be whole again and the
// interrupt sent (as long as the engine tries to attach again), then for
// its end, within the interrupt grace. One that does not stop costs the
// sandbox, as a call that ignores its interrupt does.
func (s *Session) settle(ctx context.Context, ctr *container) error {
	resynced, settled := ctr.unsettled()
	if settled == nil {
		return nil
	}
	select {
	case <-resynced:
	case <-ctr.dead:
		return ctr.err
	case <-ctx.Done():
		return ctx.Err()
	}
	grace := time.NewTimer(s.opts.interruptGrace())
	defer grace.Stop()
	select {
	case <-settled:
		return nil
	case <-ctr.dead:
		return ctr.err
	case <-ctx.Done():
		return ctx.Err()
	case <-grace.C:
		reason := fmt.Sprintf("the call cut off when the sandbox's streams were lost did not stop within %v of its interrupt, so its sandbox was replaced", s.opts.interruptGrace())
		s.discardWith(ctr, reason, true)
		return fmt.Errorf("%w: %s", ErrSandboxDied, reason)
	}
}

// lost is the result of a call cut off by lost streams: its output until
// then, and a notice that says what happened.
func (c *callState) lost(began time.Time, f frame) *Result {
	res := c.partial(began)
	res.Status = StatusError
	if f.Data == laneLost {
		res.Notice = ErrLaneBroken.Error() + " and frames on it were lost: the call was interrupted and its output from then on is gone; " +
			"the sandbox and the session's state are kept, and its frames travel the engine's stream from now on"
		return res
	}
	res.Notice = ErrStreamsLost.Error() + " (the engine's API was unreachable for a while; on Kubernetes, the API server restarted, say): " +
		"the call was interrupted and its output from then on is gone; the sandbox and the session's state are kept"
	return res
}
