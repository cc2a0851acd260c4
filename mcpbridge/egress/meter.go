package egress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// An idleBody reads a response's body, each read within idle.
type idleBody struct {
	io.ReadCloser
	conn net.Conn
	idle time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.conn.SetReadDeadline(time.Now().Add(b.idle))
	return b.ReadCloser.Read(p)
}

// A meter counts what is written through it, against the call too; each
// write must go through within idle.
type meter struct {
	c     *Client
	cv    *conversation
	w     io.Writer
	conn  net.Conn // w's connection, for its write deadline
	idle  time.Duration
	dir   string
	count *int64
	// holdHead keeps the writes of a response's head (Response.Write
	// makes several for each header) until its blank line, then writes
	// them at once: a reply crosses the sandbox transport in one frame,
	// not dozens.
	holdHead bool
	head     []byte
}

func (m *meter) Write(p []byte) (int, error) {
	if m.holdHead {
		m.head = append(m.head, p...)
		if !bytes.HasSuffix(m.head, []byte("\r\n\r\n")) && len(m.head) < maxHeadBytes {
			return len(p), nil
		}
		head := m.head
		m.holdHead, m.head = false, nil
		if _, err := m.write(head); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return m.write(p)
}

// flush writes a head still held (one cut short of its blank line).
func (m *meter) flush() error {
	if len(m.head) == 0 {
		return nil
	}
	head := m.head
	m.holdHead, m.head = false, nil
	_, err := m.write(head)
	return err
}

func (m *meter) write(p []byte) (int, error) {
	if err := m.c.spend(int64(len(p)), m.cv); err != nil {
		m.cv.Outcome, m.cv.Reason = outcomeError, err.Error()
		return 0, err
	}
	*m.count += int64(len(p))
	if mm := m.c.g.opts.Metrics; mm != nil {
		mm.Bytes(m.dir, int64(len(p)))
	}
	m.conn.SetWriteDeadline(time.Now().Add(m.idle))
	return m.w.Write(p)
}

// ReadFrom copies r through Write in reads of up to copyBuffer bytes, so
// a relayed body moves in the transport's largest frames, each written as
// soon as it is read.
func (m *meter) ReadFrom(r io.Reader) (int64, error) {
	buf := make([]byte, copyBuffer)
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := m.Write(buf[:n]); werr != nil {
				return total, werr
			}
			total += int64(n)
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// spend counts n bytes against the current call; past the policy's
// bound the connection is cut, and the call's notice says so.
func (c *Client) spend(n int64, cv *conversation) error {
	limit := cv.network.MaxBytesPerCall()
	if used := c.callUsed.Add(n); used > limit {
		return c.overBudget(cv, fmt.Sprintf("cut: the call's bytes through the gateway passed max_bytes_per_call (%d)", limit))
	}
	return nil
}

// overBudget records why as the call's notice (the first of the call
// wins), naming cv's target, and returns it as an error.
func (c *Client) overBudget(cv *conversation, why string) error {
	note := fmt.Sprintf("egress: the connection to %s was %s%s", net.JoinHostPort(cv.Host, strconv.Itoa(cv.Port)), why, cv.note)
	c.notice.CompareAndSwap(nil, &note)
	return errors.New(why)
}
