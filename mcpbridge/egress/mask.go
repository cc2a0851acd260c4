package egress

import (
	"bytes"
	"io"
	"net/http"
	"slices"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// maskByte replaces each byte of a secret in an answer.
const maskByte = '*'

// maskRead is what one read of an answer's body asks its source for,
// besides the bytes held back from the read before: a whole frame of the
// sandbox transport, as an unmasked body is relayed.
const maskRead = copyBuffer

// A masker finds the secrets the gateway added to a request in what the
// host answers (an echo of the request, a debug page, an error quoting a
// header) and replaces each occurrence with as many maskBytes, so that
// lengths (Content-Length) stay right and the sandbox never reads a
// secret it was not given. Its needles are few (a host's inject values);
// each is searched with bytes.Index, which is fast enough that the scan
// costs little next to the copy.
type masker struct {
	needles [][]byte // distinct, none empty
	longest int
	first   [256]bool // the needles' first bytes
}

// newMasker returns a masker of secrets, or nil when there is none.
func newMasker(secrets []policy.Secret) *masker {
	m := &masker{}
	for _, s := range secrets {
		v := []byte(s.Reveal())
		if len(v) == 0 || slices.ContainsFunc(m.needles, func(n []byte) bool { return bytes.Equal(n, v) }) {
			continue
		}
		m.needles = append(m.needles, v)
		m.longest = max(m.longest, len(v))
		m.first[v[0]] = true
	}
	if len(m.needles) == 0 {
		return nil
	}
	return m
}

// A span is an occurrence of a needle: w[s:e].
type span struct{ s, e int }

// scan masks w: every occurrence of a needle that starts before the hold
// point, and the first carry bytes (the tail of occurrences found before
// w's start, in bytes held back then). It returns the hold point keep
// (w[:keep] is final; w[keep:], at most longest-1 bytes, may begin an
// occurrence that the next bytes complete, and is left as it was, to be
// scanned again with them), the bytes of w[keep:] to mask then, and how
// many runs of masked bytes it began (overlapping occurrences make one).
// final says no bytes follow: nothing is held. occ is scratch space,
// returned for reuse.
func (m *masker) scan(w []byte, carry int, final bool, occ []span) (keep, nextCarry, runs int, _ []span) {
	keep = len(w)
	if !final {
		keep = m.holdPoint(w)
	}
	occ = occ[:0]
	for _, n := range m.needles {
		for i := 0; ; {
			j := bytes.Index(w[i:], n)
			if j < 0 || i+j >= keep {
				break
			}
			occ = append(occ, span{i + j, i + j + len(n)})
			i += j + 1
		}
	}
	// All occurrences found first: masking as they are found would hide
	// those that overlap them.
	slices.SortFunc(occ, func(a, b span) int { return a.s - b.s })
	end := min(carry, len(w)) // masked through here
	maskRange(w, 0, min(end, keep))
	for _, o := range occ {
		if o.s >= end {
			runs++ // not a continuation of a run before it
		}
		maskRange(w, max(o.s, end), min(o.e, keep))
		end = max(end, o.e)
	}
	return keep, max(end-keep, 0), runs, occ
}

// holdPoint returns where w's tail that may begin a needle begins: the
// first i, of w's last longest-1 bytes, such that w[i:] is a proper
// prefix of a needle; len(w) when there is none.
func (m *masker) holdPoint(w []byte) int {
	for i := max(0, len(w)-m.longest+1); i < len(w); i++ {
		if !m.first[w[i]] {
			continue
		}
		for _, n := range m.needles {
			if len(n) > len(w)-i && bytes.HasPrefix(n, w[i:]) {
				return i
			}
		}
	}
	return len(w)
}

func maskRange(w []byte, from, to int) {
	for i := from; i < to; i++ {
		w[i] = maskByte
	}
}

// maskString returns s with every occurrence of a needle masked, and how
// many runs of masked bytes that made.
func (m *masker) maskString(s string) (string, int) {
	if m == nil || len(s) == 0 {
		return s, 0
	}
	b := []byte(s)
	_, _, found, _ := m.scan(b, 0, true, nil)
	if found == 0 {
		return s, 0
	}
	return string(b), found
}

// header masks the names and values of h in place and returns how many
// occurrences it masked.
func (m *masker) header(h http.Header) int {
	if m == nil {
		return 0
	}
	total := 0
	masked := http.Header{}
	for k, vs := range h {
		mk, n := m.maskString(k)
		total += n
		mvs := make([]string, len(vs))
		changed := n > 0
		for i, v := range vs {
			mvs[i], n = m.maskString(v)
			total += n
			changed = changed || n > 0
		}
		if changed {
			delete(h, k)
			masked[mk] = append(masked[mk], mvs...)
		}
	}
	for k, vs := range masked {
		h[k] = append(h[k], vs...)
	}
	return total
}

// A maskReader is a body read through a masker: bounded memory (at most
// longest-1 bytes held back across reads, besides one read's bytes),
// whatever its length.
type maskReader struct {
	m     *masker
	r     io.Reader
	count *int64 // runs of masked bytes, added to
	onEOF func() // called once the body ends cleanly (its trailer read)

	buf   []byte // held bytes, then those of the last read
	n     int    // bytes in buf
	keep  int    // buf[:keep] is masked and final
	out   []byte // what of buf[:keep] is not yet returned
	carry int    // bytes of buf[keep:n] to mask
	occ   []span // scratch for scan
	err   error  // the source's, once seen
}

// reader returns r read through m, counting occurrences into count;
// onEOF (may be nil) runs when r ends cleanly.
func (m *masker) reader(r io.Reader, count *int64, onEOF func()) *maskReader {
	return &maskReader{m: m, r: r, count: count, onEOF: onEOF, buf: make([]byte, m.longest-1+maskRead)}
}

func (r *maskReader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.n = copy(r.buf, r.buf[r.keep:r.n]) // the held bytes, to the front
		r.keep = 0
		nr, err := r.r.Read(r.buf[r.n:])
		r.n += nr
		if nr == 0 && err == nil {
			continue
		}
		var runs int
		r.keep, r.carry, runs, r.occ = r.m.scan(r.buf[:r.n], r.carry, err == io.EOF, r.occ)
		*r.count += int64(runs)
		r.out = r.buf[:r.keep]
		if err != nil {
			r.err = err
			// A clean end holds nothing back. A body cut short drops what
			// is held: it may be a secret's beginning, and no byte will
			// come to tell.
			r.n = r.keep
			if err == io.EOF && r.onEOF != nil {
				r.onEOF()
			}
		}
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// Close closes the source when it is an io.Closer.
func (r *maskReader) Close() error {
	if c, ok := r.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
