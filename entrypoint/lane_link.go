package entrypoint

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A laneLink is a container's use of its fast lane: the offer, the one
// connection, and the fall back to the stream when the lane breaks
// (PROTOCOL.md, The fast lane).
type laneLink struct {
	lane   *lane
	answer chan laneReport // the runtime's answer to the offer

	// Guarded by the container's wmu.
	conn    *net.UnixConn // the frames to the sandbox go here while in use
	wrote   int64         // bytes of whole frames written to conn
	broken  bool          // it broke: frames wait in queue for the report
	settled bool          // the runtime reported the break: all on the stream
	queue   [][]byte
	queued  int

	rights *rightsReader // reads conn, with the descriptors sent on it
	read   atomic.Int64  // bytes of whole frames read from conn
	done   chan struct{} // closed when the lane's reader returns
	// live is conn while in use, for closing it without wmu, which a
	// write blocked on it holds; reported is set once the runtime's
	// report of a break came.
	live     atomic.Pointer[net.UnixConn]
	reported atomic.Bool
}

// laneWriteTimeout bounds one write to the lane: a runtime that reads
// nothing for that long breaks it (and, reporting nothing, is stopped).
var laneWriteTimeout = 10 * time.Second

// sharesHostFS is implemented by sandboxes that see the host's files as
// they are (enginetest.Local's processes): their lane is offered at its
// host path, not at engine.LaneDir.
type sharesHostFS interface{ SharesHostFS() bool }

// openLane gives spec a lane of lanes, unless every engine tried so far
// failed to reach one; nil when it has none.
func openLane(lanes *Lanes, spec *engine.Spec, log interface{ Warn(string, ...any) }) *laneLink {
	if lanes == nil || lanes.allFailed() {
		return nil
	}
	ln, err := lanes.open()
	if err != nil {
		log.Warn("no fast lane for this sandbox", "err", err)
		return nil
	}
	spec.Lane = ln.dir
	return &laneLink{lane: ln, answer: make(chan laneReport, 1), done: make(chan struct{})}
}

// offerLane offers the runtime its lane and, when it connects and
// authenticates, moves the frames onto it; otherwise they stay on the
// stream and lanes learns why.
func (ctr *container) offerLane(lanes *Lanes) {
	l := ctr.link
	name := placedOn(ctr.sb)
	var err error
	if lanes.failed(name) {
		ctr.dropLane()
		return
	}
	path := engine.LaneDir + "/" + laneSocket
	if s, ok := ctr.sb.(sharesHostFS); ok && s.SharesHostFS() {
		path = filepath.Join(l.lane.dir, laneSocket)
	}
	timer := time.NewTimer(2 * laneAnswerTimeout) // the runtime's connect has laneAnswerTimeout
	defer timer.Stop()
	err = ctr.send(laneOffer{T: frameLane, Path: path, Token: l.lane.token})
	var rep laneReport
	definite := false
	if err == nil {
		select {
		case rep = <-l.answer:
			if !rep.OK {
				err = fmt.Errorf("the sandbox could not connect to it: %s", rep.Error)
				definite = true
			}
		case <-ctr.dead:
			err = ctr.err
		case <-timer.C:
			err = errors.New("the runtime did not answer the offer")
		}
	}
	var acc laneConn
	if err == nil {
		select {
		case acc = <-l.lane.accepted:
			err = acc.err
		case <-ctr.dead:
			err = ctr.err
		case <-timer.C:
			err = errors.New("no connection came")
		}
	}
	if err != nil {
		// Only what says the engine's sandboxes cannot reach a lane is
		// learnt: not a slow answer, nor a stranger's connection.
		if definite {
			lanes.learn(name, err)
		}
		ctr.dropLane()
		return
	}
	lanes.learn(name, nil)
	ctr.wmu.Lock()
	l.conn, l.rights = acc.conn, newRightsReader(acc.conn)
	l.live.Store(acc.conn)
	ctr.wmu.Unlock()
	go ctr.readLane(acc.conn)
}

// dropLane gives up the lane before it carried anything.
func (ctr *container) dropLane() {
	ctr.wmu.Lock()
	l := ctr.link
	ctr.link = nil
	ctr.linkP.Store(nil)
	ctr.declined.Store(l != nil)
	ctr.wmu.Unlock()
	if l != nil {
		l.lane.close()
	}
}

// closeLane ends the lane with the container.
func (ctr *container) closeLane() {
	l := ctr.linkNow()
	if l == nil {
		return
	}
	// Closed before wmu is taken: a write blocked on it, which holds
	// wmu, fails at once.
	if c := l.live.Load(); c != nil {
		c.Close()
	}
	l.lane.close()
}

// linkNow returns the lane's link without waiting for wmu (nil: none).
func (ctr *container) linkNow() *laneLink { return ctr.linkP.Load() }

// laneAnswered takes the runtime's answer to the offer (f.Lane, not a
// break); one that nothing asked for breaks the protocol.
func (ctr *container) laneAnswered(f frame) error {
	ctr.wmu.Lock()
	l := ctr.link
	ctr.wmu.Unlock()
	if l == nil {
		if ctr.declined.Load() {
			return nil // an answer that came after the host gave up
		}
		return fmt.Errorf("%w: lane frame, and no lane was offered", errProtocol)
	}
	select {
	case l.answer <- f.Lane:
		return nil
	default:
		return fmt.Errorf("%w: a second answer to the lane's offer", errProtocol)
	}
}

// writeLane writes data to the sandbox on the lane while it is in use,
// or keeps it for the stream while a break is not yet reported; it
// returns false when data is for the stream. The caller holds wmu.
func (ctr *container) writeLane(data []byte) (bool, error) {
	l := ctr.link
	if l == nil || l.conn == nil || l.settled {
		return false, nil
	}
	if !l.broken {
		l.conn.SetWriteDeadline(time.Now().Add(laneWriteTimeout))
		n, err := l.conn.Write(data)
		if err == nil {
			l.wrote += int64(n)
			return true, nil
		}
		ctr.breakLaneLocked(err)
		// Whatever part of data reached the runtime is dropped with its
		// cut frame; the whole frame goes on the stream after the report.
	}
	if l.queued+len(data) > maxLaneQueue {
		// Dropping it would lose a frame silently: the sandbox goes.
		err := fmt.Errorf("%w: over %d bytes waited for the runtime's report of a broken lane", ErrSandboxDied, maxLaneQueue)
		ctr.fault(err)
		go ctr.sb.Close()
		return true, err
	}
	l.queue = append(l.queue, data)
	l.queued += len(data)
	return true, nil
}

// breakLaneLocked marks the lane broken: the frames to the sandbox wait
// for the runtime's report of the break, which must come on the stream
// within laneFallbackTimeout. The caller holds wmu.
func (ctr *container) breakLaneLocked(why error) {
	l := ctr.link
	if l == nil || l.broken || l.settled {
		return
	}
	l.broken = true
	// Half closed: the runtime's end sees the break, and what it wrote
	// before is still read to the end (the reader closes it at EOF).
	l.conn.CloseWrite()
	ctr.log.Warn("the fast lane to the sandbox broke; its frames travel the engine's stream from now on",
		"id", ctr.sb.ID(), "err", why)
	time.AfterFunc(laneFallbackTimeout, func() {
		if !l.reported.Load() && ctr.Err() == nil {
			ctr.fault(fmt.Errorf("%w: the fast lane broke and the runtime did not say so on the stream within %v", errProtocol, laneFallbackTimeout))
			ctr.sb.Close()
		}
	})
}

// readLane dispatches the sandbox's frames from the lane until it ends.
func (ctr *container) readLane(c *net.UnixConn) {
	l := ctr.link
	defer close(l.done)
	defer l.rights.close()
	defer c.Close()
	r := bufio.NewReaderSize(l.rights, 256<<10)
	seen := true
	for {
		line, err := engine.ReadLine(r, maxFrameBytes)
		if errors.Is(err, engine.ErrLineTooLong) {
			err = fmt.Errorf("%w: frame longer than %d bytes", errProtocol, maxFrameBytes)
		} else if err != nil && !errors.Is(err, errProtocol) {
			ctr.laneEnded(err) // a frame cut by the break: the runtime sends it again
			return
		}
		var f frame
		if err == nil {
			f, err = parseFrame(line)
		}
		if err == nil && f.NetLen > 0 {
			f.NetData = make([]byte, f.NetLen)
			if _, rerr := io.ReadFull(r, f.NetData); rerr != nil {
				ctr.laneEnded(rerr) // cut by the break: the runtime sends it again
				return
			}
			err = f.withPayload()
		}
		if err == nil && (f.T == frameReady || f.T == frameLane) {
			err = fmt.Errorf("%w: %s frame on the lane", errProtocol, f.T)
		}
		if err == nil {
			l.read.Add(int64(len(line) + 1 + f.NetLen))
			ctr.dmu.Lock()
			err = ctr.dispatch(f, &seen, nil)
			ctr.dmu.Unlock()
		}
		if err != nil {
			if ctr.Err() == nil {
				ctr.log.Warn("sandbox protocol violation on the fast lane; stopping the sandbox", "err", err)
			}
			ctr.fault(err)
			ctr.sb.Close()
			return
		}
	}
}

// laneEnded handles the end of the lane's input: nothing when the
// container is ending anyway, else a break.
func (ctr *container) laneEnded(err error) {
	t := time.NewTimer(200 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctr.dead:
		return
	case <-t.C:
	}
	ctr.wmu.Lock()
	ctr.breakLaneLocked(err)
	ctr.wmu.Unlock()
}

// laneFellBack takes the runtime's report of a broken lane (f.Lane.Broke):
// once the lane's reader has read all that reached it, the bytes each
// side wrote are compared with what the other read. When none were lost,
// nothing else happens; else the call in flight is cut off as a lost
// stream cuts it (ErrLaneBroken; its state is kept). The frames kept for
// the sandbox meanwhile then go on the stream, in order, and so does
// everything after them.
func (ctr *container) laneFellBack(rep laneReport) error {
	ctr.wmu.Lock()
	l := ctr.link
	if l == nil || l.conn == nil || l.settled {
		ctr.wmu.Unlock()
		if rep.Wrote == 0 {
			return nil // the lane was given up before it carried a frame
		}
		return fmt.Errorf("%w: report of a broken lane that carried nothing", errProtocol)
	}
	l.reported.Store(true)
	ctr.breakLaneLocked(errors.New(rep.Error))
	ctr.wmu.Unlock()
	// The reader reads to the end of what the runtime wrote (it shut its
	// end); dispatching may wait for a place among the RPCs in flight,
	// which their handlers free.
	select {
	case <-l.done:
	case <-ctr.dead:
		return nil
	}
	read := l.read.Load()
	ctr.wmu.Lock()
	wrote := l.wrote
	intact := rep.Wrote == read && rep.Read == wrote
	var cut string
	if !intact {
		cut = ctr.abandonAs(laneLost)
		ctr.failReads(ErrLaneBroken)
	}
	queue := l.queue
	l.queue, l.queued, l.settled = nil, 0, true
	var err error
	for _, data := range queue {
		if _, err = ctr.sb.Stdin().Write(data); err != nil {
			break
		}
	}
	ctr.wmu.Unlock()
	ctr.log.Warn("the fast lane's break was reported; the frames travel the engine's stream",
		"id", ctr.sb.ID(), "intact", intact, "sandbox wrote", rep.Wrote, "host read", read, "host wrote", wrote, "sandbox read", rep.Read)
	if err != nil {
		return nil // the stream's reader reports the sandbox's end
	}
	if cut != "" {
		ctr.egress.sever()
		ctr.interruptCut(cut) // an error: the stream's reader reports the sandbox's end
	}
	return nil
}
