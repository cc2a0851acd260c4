package lifecycle

import (
	"io"
	"sync"
)

// StreamBufferBytes bounds each demultiplexed output stream of a sandbox.
const StreamBufferBytes = 256 << 10

// A Pipe is an in-memory pipe holding at most cap bytes. Write
// blocks while the buffer is full, so a container that prints without end
// is slowed to the reader's pace instead of growing memory. Read blocks
// while it is empty and returns the writer's close error (io.EOF for a
// clean close) once drained.
type Pipe struct {
	mu       sync.Mutex
	cond     *sync.Cond
	buf      []byte // ring buffer
	start, n int
	werr     error // set when the write side is closed
	rclosed  bool  // set when the read side is closed
	// brk is read once after the next brkAt buffered bytes (nil: none).
	brk   error
	brkAt int
}

func NewPipe(capacity int) *Pipe {
	p := &Pipe{buf: make([]byte, capacity)}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// Write copies b into the buffer, blocking while it is full.
func (p *Pipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	written := 0
	for len(b) > 0 {
		for p.n == len(p.buf) && !p.rclosed && p.werr == nil {
			p.cond.Wait()
		}
		if p.rclosed || p.werr != nil {
			return written, io.ErrClosedPipe
		}
		end := (p.start + p.n) % len(p.buf)
		limit := len(p.buf)
		if end < p.start {
			limit = p.start
		}
		k := copy(p.buf[end:limit], b)
		p.n += k
		written += k
		b = b[k:]
		p.cond.Broadcast()
	}
	return written, nil
}

// Read copies buffered bytes into b, blocking while the buffer is empty.
func (p *Pipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.n == 0 && p.werr == nil && !p.rclosed && p.brk == nil {
		p.cond.Wait()
	}
	if p.rclosed {
		return 0, io.ErrClosedPipe
	}
	if p.brk != nil {
		if p.brkAt == 0 {
			err := p.brk
			p.brk = nil
			return 0, err
		}
		b = b[:min(len(b), p.brkAt)]
	}
	if p.n == 0 {
		return 0, p.werr
	}
	k := 0
	for k < len(b) && p.n > 0 {
		end := min(p.start+p.n, len(p.buf))
		c := copy(b[k:], p.buf[p.start:end])
		k += c
		p.start = (p.start + c) % len(p.buf)
		p.n -= c
	}
	if p.brk != nil {
		p.brkAt -= k
	}
	p.cond.Broadcast()
	return k, nil
}

// Break makes readers get err once, after the bytes buffered now and
// before those written later: where a stream was cut and another began.
// A second Break before the first was read keeps the first.
func (p *Pipe) Break(err error) {
	p.mu.Lock()
	if p.brk == nil {
		p.brk, p.brkAt = err, p.n
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

// CloseWithError closes the write side; readers get err (io.EOF when nil)
// after the buffered bytes.
func (p *Pipe) CloseWithError(err error) {
	if err == nil {
		err = io.EOF
	}
	p.mu.Lock()
	if p.werr == nil {
		p.werr = err
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Close closes the read side: pending and later writes fail, and the
// buffer is released.
func (p *Pipe) Close() error {
	p.mu.Lock()
	p.rclosed = true
	p.buf, p.n = nil, 0
	p.cond.Broadcast()
	p.mu.Unlock()
	return nil
}
