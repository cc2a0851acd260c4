package egress

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

func secrets(vals ...string) []policy.Secret {
	out := make([]policy.Secret, len(vals))
	for i, v := range vals {
		out[i] = policy.NewSecret(v)
	}
	return out
}

// maskAll is the reference: every byte of every occurrence of a needle
// in data masked, found on the whole at once.
func maskAll(data []byte, needles [][]byte) []byte {
	out := bytes.Clone(data)
	for _, n := range needles {
		if len(n) == 0 {
			continue
		}
		for i := 0; i+len(n) <= len(data); i++ {
			if bytes.Equal(data[i:i+len(n)], n) {
				for k := i; k < i+len(n); k++ {
					out[k] = maskByte
				}
			}
		}
	}
	return out
}

// chunked is a reader giving data in reads of the sizes given, in turn.
type chunked struct {
	data  []byte
	sizes []int
	i     int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := max(1, c.sizes[c.i%len(c.sizes)])
	c.i++
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// streamMask reads data through a masker of needles in reads of sizes.
func streamMask(t testing.TB, data []byte, sizes []int, needles ...string) ([]byte, int64) {
	m := newMasker(secrets(needles...))
	if m == nil {
		return data, 0
	}
	var count int64
	out, err := io.ReadAll(m.reader(&chunked{data: data, sizes: sizes}, &count, nil))
	if err != nil {
		t.Fatal(err)
	}
	return out, count
}

func TestMaskAcrossReads(t *testing.T) {
	for _, tt := range []struct {
		name, data string
		needles    []string
		want       string
		runs       int64
	}{
		{"none", "nothing here", []string{"secret"}, "nothing here", 0},
		{"one", "a secret b", []string{"secret"}, "a ****** b", 1},
		{"at the ends", "secretxsecret", []string{"secret"}, "******x******", 2},
		{"adjacent", "secretsecret", []string{"secret"}, "************", 2},
		{"a prefix that is not", "secresecret", []string{"secret"}, "secre******", 1},
		{"overlapping needles", "xabcdex", []string{"abc", "cde"}, "x*****x", 1},
		{"nested", "Bearer tok123 tok123", []string{"Bearer tok123", "tok123"}, "************* ******", 2},
		{"self-overlapping", "aaaaa", []string{"aaa"}, "*****", 1},
		{"a held prefix at the end", "the end: secr", []string{"secret"}, "the end: secr", 0},
		{"a needle inside a longer one's prefix", "xabyy", []string{"ab", "xabyz"}, "x**yy", 1},
	} {
		for _, sizes := range [][]int{{1 << 20}, {1}, {2}, {3, 1}, {5}, {7, 2}} {
			got, runs := streamMask(t, []byte(tt.data), sizes, tt.needles...)
			if string(got) != tt.want || runs != tt.runs {
				t.Errorf("%s, reads of %v: %q (%d runs), want %q (%d)", tt.name, sizes, got, runs, tt.want, tt.runs)
			}
		}
	}
}

// TestMaskMatchesReference: on random data full of needles' pieces, read
// in random sizes, the stream's mask is the whole's.
func TestMaskMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("abc*")
	for range 2000 {
		needles := make([]string, 1+rng.IntN(3))
		for i := range needles {
			b := make([]byte, 1+rng.IntN(6))
			for k := range b {
				b[k] = alphabet[rng.IntN(3)]
			}
			needles[i] = string(b)
		}
		data := make([]byte, rng.IntN(200))
		for k := range data {
			data[k] = alphabet[rng.IntN(len(alphabet))]
		}
		sizes := []int{1 + rng.IntN(9), 1 + rng.IntN(9)}
		got, _ := streamMask(t, data, sizes, needles...)
		var ns [][]byte
		for _, n := range needles {
			ns = append(ns, []byte(n))
		}
		if want := maskAll(data, ns); !bytes.Equal(got, want) {
			t.Fatalf("needles %q, data %q, reads %v:\n got %q\nwant %q", needles, data, sizes, got, want)
		}
	}
}

// TestMaskCutShort: a body that ends in an error drops the bytes held
// back, which may be a secret's beginning.
func TestMaskCutShort(t *testing.T) {
	m := newMasker(secrets("secret-value"))
	var count int64
	src := io.MultiReader(strings.NewReader("ok then secret-va"), iotest.ErrReader(io.ErrUnexpectedEOF))
	got, err := io.ReadAll(m.reader(src, &count, nil))
	if !errors.Is(err, io.ErrUnexpectedEOF) || string(got) != "ok then " {
		t.Errorf("cut short: %q, %v", got, err)
	}
}

// TestMaskBoundedMemory: however long the body, the reader holds one
// read's bytes and fewer than the longest needle besides.
func TestMaskBoundedMemory(t *testing.T) {
	m := newMasker(secrets(strings.Repeat("z", 300)))
	var count int64
	r := m.reader(io.LimitReader(zeros{}, 64<<20), &count, nil)
	n, err := io.Copy(io.Discard, r)
	if err != nil || n != 64<<20 || cap(r.buf) != 299+maskRead {
		t.Errorf("copied %d (%v); buffer %d bytes", n, err, cap(r.buf))
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestMaskHeader(t *testing.T) {
	m := newMasker(secrets("tok-123", "Bearer tok-123"))
	h := http.Header{"X-Echo": {"Bearer tok-123", "plain"}, "X-Tok-123": {"1"}, "X-Version": {"2022-11-28"}}
	if n := m.header(h); n != 1 {
		t.Errorf("%d runs masked in the values; header %v", n, h)
	}
	if h.Get("X-Echo") != "**************" || h.Values("X-Echo")[1] != "plain" || h.Get("X-Version") != "2022-11-28" {
		t.Errorf("masked header: %v", h)
	}
	// Names are compared as Go keeps them (canonical): "X-Tok-123" holds
	// no needle as written, and stays.
	if h.Get("X-Tok-123") != "1" {
		t.Errorf("header names: %v", h)
	}
	if newMasker(secrets("", "")) != nil {
		t.Error("a masker of empty values")
	}
}

// FuzzMask: whatever the data, needles and read sizes, the streamed mask
// equals the reference mask of the whole, and is as long as the data.
func FuzzMask(f *testing.F) {
	f.Add([]byte("you sent Authorization: Bearer s3cret"), "s3cret", "Bearer s3cret", uint8(3), uint8(1))
	f.Add([]byte("aaaaaaa"), "aaa", "aa", uint8(1), uint8(2))
	f.Add([]byte("xabcdexabc"), "abc", "cde", uint8(2), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, a, b string, s1, s2 uint8) {
		if len(a) > 64 || len(b) > 64 {
			return
		}
		got, _ := streamMask(t, data, []int{int(s1), int(s2)}, a, b)
		if want := maskAll(data, [][]byte{[]byte(a), []byte(b)}); !bytes.Equal(got, want) {
			t.Fatalf("needles %q %q, reads %d %d:\n got %q\nwant %q", a, b, s1, s2, got, want)
		}
	})
}

// BenchmarkRelay compares a body copied plainly with one read through a
// masker of two secrets (a token and its header value), 64 MiB each: text
// whose every line nearly holds them ("Bearer ghp_", the worst case for
// the scan), and random bytes (a wheel).
func BenchmarkRelay(b *testing.B) {
	text := bytes.Repeat([]byte("The quick brown fox jumps over the lazy dog; Bearer ghp_ is not here.\n"), 1<<14)
	random := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	for _, bb := range []struct {
		name   string
		body   []byte
		masked bool
	}{{"plain", text, false}, {"masked-text", text, true}, {"masked-random", random, true}} {
		b.Run(bb.name, func(b *testing.B) {
			b.SetBytes(64 << 20)
			buf := make([]byte, copyBuffer)
			for b.Loop() {
				var src io.Reader = io.LimitReader(&repeat{data: bb.body}, 64<<20)
				if bb.masked {
					var count int64
					src = newMasker(secrets("ghp_0123456789abcdefABCDEF0123456789abcd", "Bearer ghp_0123456789abcdefABCDEF0123456789abcd")).reader(src, &count, nil)
				}
				io.CopyBuffer(io.Discard, struct{ io.Reader }{src}, buf)
			}
		})
	}
}

// repeat reads data over and over.
type repeat struct {
	data []byte
	off  int
}

func (r *repeat) Read(p []byte) (int, error) {
	n := copy(p, r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}
