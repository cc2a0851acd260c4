package lifecycle

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

func TestBoundedPipeRoundTrip(t *testing.T) {
	p := NewPipe(7) // small and odd, to exercise wrap-around
	want := make([]byte, 100_000)
	for i := range want {
		want[i] = byte(rand.IntN(256))
	}
	go func() {
		rest := want
		for len(rest) > 0 {
			k := min(len(rest), 1+rand.IntN(20))
			if _, err := p.Write(rest[:k]); err != nil {
				p.CloseWithError(err)
				return
			}
			rest = rest[k:]
		}
		p.CloseWithError(nil)
	}()
	var got bytes.Buffer
	buf := make([]byte, 5)
	for {
		n, err := p.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("data corrupted: got %d bytes, want %d", got.Len(), len(want))
	}
}

func TestBoundedPipeBlocksWhenFull(t *testing.T) {
	p := NewPipe(4)
	done := make(chan error, 1)
	go func() {
		_, err := p.Write([]byte("0123456789"))
		done <- err
	}()
	select {
	case <-done:
		t.Fatal("Write of 10 bytes into a 4-byte pipe returned before anything was read")
	case <-time.After(50 * time.Millisecond):
	}
	b, err := io.ReadAll(io.LimitReader(p, 10))
	if err != nil || string(b) != "0123456789" {
		t.Fatalf("ReadAll = %q, %v", b, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func TestBoundedPipeCloseReadUnblocksWriter(t *testing.T) {
	p := NewPipe(2)
	done := make(chan error, 1)
	go func() {
		_, err := p.Write([]byte("abcdef"))
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	p.Close()
	if err := <-done; !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Write after reader closed: %v, want io.ErrClosedPipe", err)
	}
}

func TestBoundedPipeWriterError(t *testing.T) {
	p := NewPipe(8)
	p.Write([]byte("hi"))
	boom := errors.New("boom")
	p.CloseWithError(boom)
	b, err := io.ReadAll(p)
	if string(b) != "hi" || !errors.Is(err, boom) {
		t.Fatalf("ReadAll = %q, %v; want \"hi\", boom", b, err)
	}
}

// TestBoundedPipeBreak: a break is read once, between the bytes buffered
// before it and those written after, then reading goes on; an empty pipe's
// reader waiting for bytes is woken by it.
func TestBoundedPipeBreak(t *testing.T) {
	p := NewPipe(16)
	p.Write([]byte("before"))
	p.Break(engine.ErrReattached)
	p.Break(io.ErrUnexpectedEOF) // the first one stands
	p.Write([]byte("after"))
	p.CloseWithError(nil)
	var got []string
	buf := make([]byte, 4)
	for {
		n, err := p.Read(buf)
		if n > 0 {
			got = append(got, string(buf[:n]))
		}
		if errors.Is(err, engine.ErrReattached) {
			got = append(got, "|")
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if s := strings.Join(got, " "); s != "befo re | afte r" {
		t.Fatalf("read %q", s)
	}

	empty := NewPipe(16)
	read := make(chan error, 1)
	go func() {
		_, err := empty.Read(buf)
		read <- err
	}()
	empty.Break(engine.ErrReattached)
	if err := <-read; !errors.Is(err, engine.ErrReattached) {
		t.Fatalf("a waiting reader got %v", err)
	}
}
