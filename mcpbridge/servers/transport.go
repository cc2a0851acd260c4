package servers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
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

// messageLines passes on the lines of a server's stdout that are JSON-RPC
// 2.0 messages (objects or batches) and drops the rest: a line that is
// not JSON, or JSON that is not JSON-RPC 2.0, would otherwise end the
// connection and fail every call in flight on it.
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
		if !isJSONRPC(trimmed) {
			m.log.Debug("dropping a line that is not a JSON-RPC message from the server's stdout", "line", string(truncate(trimmed, 200)))
			continue
		}
		m.buf = append(trimmed, '\n')
	}
	n := copy(p, m.buf)
	m.buf = m.buf[n:]
	return n, nil
}

// readLine reads one line of the server's stdout; a line over
// maxServerLine fails with engine.ErrLineTooLong and ends the connection.
func (m *messageLines) readLine() ([]byte, error) {
	line, err := engine.ReadLine(m.src, maxServerLine)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return line, nil // the last line, without its newline
	}
	return line, err
}

// Close stops the server.
func (m *messageLines) Close() error { return m.proc.Close() }

// A jsonRPCVersion is the member every JSON-RPC 2.0 message has.
type jsonRPCVersion struct {
	JSONRPC *string `json:"jsonrpc"`
}

func (v jsonRPCVersion) ok() bool { return v.JSONRPC != nil && *v.JSONRPC == "2.0" }

// isJSONRPC reports whether line is valid JSON and a JSON-RPC 2.0 message
// or a non-empty batch of them.
func isJSONRPC(line []byte) bool {
	switch line[0] {
	case '{':
		var v jsonRPCVersion
		return json.Unmarshal(line, &v) == nil && v.ok()
	case '[':
		var batch []jsonRPCVersion
		if json.Unmarshal(line, &batch) != nil || len(batch) == 0 {
			return false
		}
		for _, v := range batch {
			if !v.ok() {
				return false
			}
		}
		return true
	}
	return false
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
