package tasks

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/sandboxfile"
)

// memSandbox is a sandbox's files in memory, as the session that drives
// it (sandboxfile.Files) and the engine (engine.Files) reach them.
type memSandbox struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (m *memSandbox) CopyIn(_ context.Context, dir string, r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			m.put(path.Join(dir, h.Name), data)
		}
	}
}

func (m *memSandbox) ReadFile(_ context.Context, root, rel string, max int64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.files[path.Join(root, rel)]
	if !ok {
		return nil, fmt.Errorf("reading %s: %w", rel, fs.ErrNotExist)
	}
	if int64(len(data)) > max {
		return nil, engine.ErrFileTooLarge
	}
	return bytes.Clone(data), nil
}

func (m *memSandbox) OpenFile(ctx context.Context, root, rel string, max int64) (io.ReadCloser, int64, error) {
	data, err := m.ReadFile(ctx, root, rel, max)
	if err != nil {
		return nil, 0, err
	}
	return io.NopCloser(bytes.NewReader(data)), int64(len(data)), nil
}

func (m *memSandbox) get(p string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.files[p])
}

func (m *memSandbox) put(p string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[p] = data
}

// memEngine reaches the one sandbox of a test through its files
// (engine.FileReacher); nothing else of an engine is used.
type memEngine struct {
	engine.Engine
	sb *memSandbox
}

func (e memEngine) SandboxFiles(context.Context, string, string) (engine.Files, error) {
	return e.sb, nil
}

// TestRecordTampered: the record of another replica's task is read back
// as it was written; one the sandbox's code altered (its data under the
// old tag), moved from another task, or cut short is refused, with the
// error tasks/get answers, never shown as the task; a "ctl" it forged
// is not applied.
func TestRecordTampered(t *testing.T) {
	ctx := context.Background()
	keys, err := handle.NewKeyring(strings.Repeat("k", handle.MinKeyLen))
	if err != nil {
		t.Fatal(err)
	}
	sb := &memSandbox{files: map[string][]byte{}}
	m := New(Host{Engine: memEngine{sb: sb}, Keys: keys, Files: &sandboxfile.Keeper{Owner: "1000", Keys: keys}, Shared: true,
		MaxTimeout: time.Minute, Logger: slog.New(slog.DiscardHandler)}, Options{})
	mk := func() (*Task, handle.Task) {
		tk := newTask(time.Minute, time.Hour, func(*mcp.CallToolResult) string { return "success" })
		id, ht, err := keys.MintTask(handle.Sandbox{Ref: strings.Repeat("c", 64)}, "", tk.created)
		if err != nil {
			t.Fatal(err)
		}
		tk.id, tk.sb, tk.nonce, tk.files = id, ht.Sandbox, ht.Nonce, sb
		tk.cancel = func() {}
		if err := m.writeTaskRecord(ctx, tk); err != nil {
			t.Fatal(err)
		}
		return tk, ht
	}
	task, tk := mk()
	_, otk := mk()
	if v, err := m.readRemoteTask(ctx, task.id, tk); err != nil || v.Status != taskWorking || v.ID != task.id {
		t.Fatalf("the record as written: %+v, %v", v, err)
	}
	state := taskDir + "/" + tk.Nonce + "/state"
	good := sb.get(state)
	refused := func(what, want string) {
		t.Helper()
		v, err := m.readRemoteTask(ctx, task.id, tk)
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || je.Message != want {
			t.Errorf("%s: read as %+v, %v; want the error %q", what, v, err, want)
		}
	}

	var rec map[string]json.RawMessage
	if err := json.Unmarshal(good, &rec); err != nil {
		t.Fatal(err)
	}
	altered := strings.Replace(string(rec["data"]), `"status":"working"`, `"status":"completed"`, 1)
	if altered == string(rec["data"]) {
		t.Fatalf("no status in the record: %s", rec["data"])
	}
	rec["data"] = json.RawMessage(altered)
	forged, _ := json.Marshal(rec)
	sb.put(state, forged)
	refused("altered", "reading the task's record from its sandbox: the task's state does not carry the bridge's tag")

	sb.put(state, sb.get(taskDir+"/"+otk.Nonce+"/state"))
	refused("another task's", "reading the task's record from its sandbox: the task's state does not carry the bridge's tag")

	sb.put(state, good[:len(good)/2])
	refused("cut short", "reading the task's record from its sandbox: the task's state is incomplete or not a bridge's: unexpected end of JSON input")

	sb.put(state, good)
	if v, err := m.readRemoteTask(ctx, task.id, tk); err != nil || v.Status != taskWorking {
		t.Fatalf("the record put back: %+v, %v", v, err)
	}

	// A "ctl" under a tag of other data: not applied.
	ctl, _ := json.Marshal(map[string]any{"data": json.RawMessage(`{"seq":1,"cancel":true}`), "tag": keys.Tag(tk.Nonce, "ctl", `{"seq":1}`)})
	sb.put(taskDir+"/"+tk.Nonce+"/ctl", ctl)
	if m.applyControl(ctx, task) || task.view().CtlAck != 0 || task.cancelled {
		t.Error("a forged ctl was applied")
	}
	// The ctl another replica writes is.
	if err := m.writeTaskFile(ctx, sb, tk.Nonce, "ctl", []byte(`{"seq":1,"cancel":true}`)); err != nil {
		t.Fatal(err)
	}
	if !m.applyControl(ctx, task) || task.view().CtlAck != 1 || !task.cancelled {
		t.Error("the ctl written was not applied")
	}
}
