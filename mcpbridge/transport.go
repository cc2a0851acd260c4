package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxServerLine bounds one line a proxied server writes on stdout.
const maxServerLine = 32 << 20

// A noiseTolerantTransport runs a server command and speaks MCP over its
// stdio, dropping what is not a JSON-RPC message on its stdout (blank
// lines, banners, stray prints) instead of failing the connection.
type noiseTolerantTransport struct {
	cmd *exec.Cmd
	log *slog.Logger
}

// Connect starts the command.
func (t *noiseTolerantTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	p := &serverProcess{cmd: t.cmd, stdin: stdin, done: make(chan struct{})}
	go func() { p.waitErr = t.cmd.Wait(); close(p.done) }()
	r := &messageLines{src: bufio.NewReaderSize(stdout, 64<<10), log: t.log, proc: p}
	return (&mcp.IOTransport{Reader: r, Writer: p}).Connect(ctx)
}

// A serverProcess is the server's stdin; closing it stops the server:
// EOF first, then SIGTERM, then SIGKILL.
type serverProcess struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	done    chan struct{}
	waitErr error
	once    sync.Once
}

func (p *serverProcess) Write(b []byte) (int, error) { return p.stdin.Write(b) }

func (p *serverProcess) Close() error {
	p.once.Do(func() {
		p.stdin.Close()
		for _, step := range []struct {
			wait time.Duration
			sig  syscall.Signal
		}{{2 * time.Second, syscall.SIGTERM}, {2 * time.Second, syscall.SIGKILL}} {
			select {
			case <-p.done:
				return
			case <-time.After(step.wait):
				p.cmd.Process.Signal(step.sig)
			}
		}
		<-p.done
	})
	return nil
}

// messageLines passes on the lines of a server's stdout that look like
// JSON-RPC messages (objects or batches) and drops the rest.
type messageLines struct {
	src  *bufio.Reader
	log  *slog.Logger
	proc *serverProcess
	buf  []byte // the rest of the current line
}

func (m *messageLines) Read(p []byte) (int, error) {
	for len(m.buf) == 0 {
		line, err := m.readLine()
		if err != nil {
			return 0, err
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			continue
		}
		if trimmed[0] != '{' && trimmed[0] != '[' {
			m.log.Debug("dropping a non-JSON line from the server's stdout", "line", string(truncate(trimmed, 200)))
			continue
		}
		m.buf = append(trimmed, '\n')
	}
	n := copy(p, m.buf)
	m.buf = m.buf[n:]
	return n, nil
}

func (m *messageLines) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := m.src.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxServerLine {
			return nil, fmt.Errorf("server wrote a line over %d bytes", maxServerLine)
		}
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

// Close stops the server.
func (m *messageLines) Close() error { return m.proc.Close() }

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
