package entrypoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"sync"
	"time"
)

// Reading a file out over the lane: the runtime reads it as the sandbox
// user, without following a link at any component, and sends its bytes
// raw in read_data frames, then read_end (PROTOCOL.md, The fast lane).
const (
	frameRead     = "read"
	frameReadData = "read_data"
	frameReadEnd  = "read_end"
	// maxReadChunk bounds the bytes of one read_data frame.
	maxReadChunk = 1 << 20
	// laneReadTimeout bounds a read over the lane; past it, the file is
	// read through the engine instead.
	laneReadTimeout = 30 * time.Second
)

// errNoLane reports a read the lane cannot serve (none in use): the
// caller reads through the engine instead.
var errNoLane = errors.New("no fast lane in use")

// A laneReads is a container's reads in flight over its lane, by id.
type laneReads struct {
	mu   sync.Mutex
	seq  int64
	open map[string]*laneRead
}

// A laneRead collects one file's bytes, at most max of them.
type laneRead struct {
	max  int64
	buf  bytes.Buffer
	err  error
	done chan struct{}
}

// readFrame asks the runtime for a file under OutDir.
type readFrame struct {
	T    string `json:"t"`
	ID   string `json:"id"`
	Path string `json:"path"`
	Max  int64  `json:"max"`
}

// readOverLane reads the file rel (relative to OutDir) over the lane, at
// most max bytes; errNoLane when no lane is in use.
func (ctr *container) readOverLane(ctx context.Context, rel string, max int64) ([]byte, error) {
	ctr.wmu.Lock()
	l := ctr.link
	inUse := l != nil && l.conn != nil && !l.broken && !l.settled
	ctr.wmu.Unlock()
	if !inUse {
		return nil, errNoLane
	}
	p := OutDir + "/" + rel
	if err := checkOutPath(p); err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	r := &laneRead{max: max, done: make(chan struct{})}
	rs := &ctr.reads
	rs.mu.Lock()
	rs.seq++
	id := "r" + strconv.FormatInt(rs.seq, 10)
	if rs.open == nil {
		rs.open = map[string]*laneRead{}
	}
	rs.open[id] = r
	rs.mu.Unlock()
	defer func() {
		rs.mu.Lock()
		delete(rs.open, id)
		rs.mu.Unlock()
	}()
	if err := ctr.send(readFrame{T: frameRead, ID: id, Path: p, Max: max}); err != nil {
		return nil, err
	}
	timer := time.NewTimer(laneReadTimeout)
	defer timer.Stop()
	select {
	case <-r.done:
	case <-ctr.dead:
		return nil, ctr.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		ctr.log.Warn("a read over the fast lane did not end; reading through the engine", "path", rel, "after", laneReadTimeout)
		return nil, errNoLane
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.buf.Bytes(), nil
}

// readArrived takes a read_data or read_end frame; those of a read no
// longer waited for are dropped.
func (ctr *container) readArrived(f frame) {
	rs := &ctr.reads
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.open[f.ID]
	if r == nil {
		return
	}
	select {
	case <-r.done:
		return
	default:
	}
	if f.T == frameReadData {
		if int64(r.buf.Len())+int64(len(f.NetData)) > r.max {
			r.err = fmt.Errorf("the file is over %d bytes", r.max)
			close(r.done)
			return
		}
		r.buf.Write(f.NetData)
		return
	}
	switch {
	case f.ReadErr == "ENOENT":
		r.err = fmt.Errorf("%w: %s", fs.ErrNotExist, f.Data)
	case f.ReadErr != "":
		r.err = errors.New(f.Data)
	case int64(r.buf.Len()) != f.Size:
		r.err = fmt.Errorf("the file's %d bytes came short of its size, %d", r.buf.Len(), f.Size)
	}
	close(r.done)
}

// failReads ends every read in flight with err: frames of theirs may have
// been lost with a broken lane.
func (ctr *container) failReads(err error) {
	rs := &ctr.reads
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.open {
		select {
		case <-r.done:
		default:
			r.err = err
			close(r.done)
		}
	}
}
