package entrypoint

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
)

// A cutEngine starts local sandboxes whose streams can be cut as an
// engine's lost attachment cuts them (see engine.ErrReattached).
type cutEngine struct {
	enginetest.Local
	started chan *cutSandbox
}

func (e cutEngine) Start(ctx context.Context, spec engine.Spec) (engine.Sandbox, error) {
	sb, err := e.Local.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	c := &cutSandbox{Sandbox: sb, out: cutReader{chunks: make(chan []byte), cuts: make(chan struct{}, 1)}}
	go c.out.pump(sb.Stdout())
	e.started <- c
	return c, nil
}

// A cutSandbox is a local sandbox whose streams can be cut: bytes on their
// way either way are lost (part of a frame reaches the runtime, and part
// of one leaves it), then its output reads engine.ErrReattached.
type cutSandbox struct {
	engine.Sandbox
	out cutReader
}

func (c *cutSandbox) Stdout() io.Reader { return &c.out }

// cut cuts the streams: the runtime gets the head of a frame whose tail
// is lost; the host loses up to 100 bytes of output on their way.
func (c *cutSandbox) cut() error {
	if _, err := c.Sandbox.Stdin().Write([]byte(`{"t":"interrupt","id":"`)); err != nil {
		return err
	}
	c.out.cuts <- struct{}{}
	return nil
}

// A cutReader hands on a sandbox's output, read by pump, and reports a
// cut where one is made.
type cutReader struct {
	chunks chan []byte
	err    error // the output's end, once chunks is closed
	rest   []byte
	cuts   chan struct{}
}

func (r *cutReader) pump(src io.Reader) {
	for {
		b := make([]byte, 32<<10)
		n, err := src.Read(b)
		if n > 0 {
			r.chunks <- b[:n]
		}
		if err != nil {
			r.err = err
			close(r.chunks)
			return
		}
	}
}

func (r *cutReader) Read(p []byte) (int, error) {
	if len(r.rest) > 0 {
		n := copy(p, r.rest)
		r.rest = r.rest[n:]
		return n, nil
	}
	select {
	case <-r.cuts:
		select {
		case b := <-r.chunks: // on its way: its head is lost
			r.rest = b[min(len(b), 100):]
		default:
		}
		return 0, engine.ErrReattached
	case b, ok := <-r.chunks:
		if !ok {
			return 0, r.err
		}
		n := copy(p, b)
		r.rest = b[n:]
		return n, nil
	}
}

// TestStreamsCutMidCall: streams cut and attached again during a call that
// prints without end fail that call at once, saying so, with its output
// until then; the runtime's frames are resynchronised, the cut-off call is
// interrupted, and the next call finds the state.
func TestStreamsCutMidCall(t *testing.T) {
	eng := cutEngine{Local: enginetest.Local{T: t}, started: make(chan *cutSandbox, 1)}
	resynced := make(chan struct{}, 2)
	s := newOn(t, eng, Options{Logger: slog.New(resyncWatch{resynced})})
	want(t, exec1(t, s, "x = 42", 0), StatusSuccess, "")
	sb := <-eng.started

	var once sync.Once
	printing := make(chan struct{})
	res, err := s.Run(context.Background(), &Call{
		Code:    "import time\nwhile True:\n    print('y' * 200)\n    time.sleep(0.002)",
		Timeout: time.Minute,
		OnOutput: func(string, string) {
			once.Do(func() {
				close(printing)
				go func() {
					if err := sb.cut(); err != nil {
						t.Error(err)
					}
				}()
			})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusError || !strings.Contains(res.Notice, ErrStreamsLost.Error()) ||
		!strings.Contains(res.Notice, "the sandbox and the session's state are kept") || !strings.HasPrefix(res.Stdout, strings.Repeat("y", 200)) {
		t.Fatalf("the cut-off call: %s %q (stdout %.50q)", res.Status, res.Notice, res.Stdout)
	}
	// The next call waits for the cut-off one to stop, then runs in the
	// same interpreter.
	res = exec1(t, s, "print(x)", 30*time.Second)
	want(t, res, StatusSuccess, "42\n")
	if res.StateLost || res.Notice != "" {
		t.Fatalf("after the cut: state lost %v, notice %q", res.StateLost, res.Notice)
	}
	// A cut between calls costs nothing but the resync.
	<-resynced
	if err := sb.cut(); err != nil {
		t.Fatal(err)
	}
	<-resynced
	want(t, exec1(t, s, "x += 1\nprint(x)", 30*time.Second), StatusSuccess, "43\n")
}

// A resyncWatch is a log handler that signals each resynchronisation.
type resyncWatch struct{ c chan<- struct{} }

func (w resyncWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w resyncWatch) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "frames resynchronised") {
		w.c <- struct{}{}
	}
	return nil
}
func (w resyncWatch) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w resyncWatch) WithGroup(string) slog.Handler      { return w }
