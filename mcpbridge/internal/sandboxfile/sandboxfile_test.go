package sandboxfile

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
)

// memFiles is a sandbox's files in memory: what CopyIn extracted, by
// path, and the headers it saw.
type memFiles struct {
	files   map[string][]byte
	headers []*tar.Header
}

func (m *memFiles) CopyIn(_ context.Context, dir string, r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		m.headers = append(m.headers, h)
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			m.files[path.Join(dir, h.Name)] = data
		}
	}
}

func (m *memFiles) ReadFile(_ context.Context, root, rel string, max int64) ([]byte, error) {
	data, ok := m.files[path.Join(root, rel)]
	if !ok {
		return nil, fmt.Errorf("reading %s: %w", rel, fs.ErrNotExist)
	}
	if int64(len(data)) > max {
		return nil, errors.New("too large")
	}
	return data, nil
}

func newKeeper(t *testing.T, owner string) *Keeper {
	t.Helper()
	keys, err := handle.NewKeyring(strings.Repeat("k", handle.MinKeyLen))
	if err != nil {
		t.Fatal(err)
	}
	return &Keeper{Owner: owner, Keys: keys}
}

// TestWrite: a file lands in its directory under the files-out mount,
// every directory down to it made, all owned by the sandbox user and
// readable by it only; a directory elsewhere is refused.
func TestWrite(t *testing.T) {
	k := newKeeper(t, "1000:1001")
	m := &memFiles{files: map[string][]byte{}}
	dir := entrypoint.OutDir + "/.mcp-tasks/abc"
	if err := k.Write(context.Background(), m, dir, "state", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range m.headers {
		names = append(names, h.Name)
		if h.Uid != 1000 || h.Gid != 1001 {
			t.Errorf("%s is owned by %d:%d, want 1000:1001", h.Name, h.Uid, h.Gid)
		}
		if want := int64(0o600); h.Typeflag == tar.TypeDir && h.Mode != 0o700 || h.Typeflag == tar.TypeReg && h.Mode != want {
			t.Errorf("%s has mode %o", h.Name, h.Mode)
		}
	}
	if got, want := strings.Join(names, " "), ".mcp-tasks/ .mcp-tasks/abc/ .mcp-tasks/abc/state"; got != want {
		t.Errorf("the archive holds %s, want %s", got, want)
	}
	if data, err := k.Read(context.Background(), m, dir, "state", 10); err != nil || string(data) != "hi" {
		t.Errorf("Read = %q, %v", data, err)
	}
	if err := k.Write(context.Background(), m, "/tmp/x", "state", nil); err == nil {
		t.Error("a directory outside the files-out mount was written")
	}
	if uid, gid := ids("nobody"); uid != 65534 || gid != 65534 {
		t.Errorf("ids(nobody) = %d:%d", uid, gid)
	}
	if uid, gid := ids("42"); uid != 42 || gid != 42 {
		t.Errorf("ids(42) = %d:%d", uid, gid)
	}
}

// TestRecord: a record reads back with the parts it was written with;
// one whose data, tag or parts differ, or that is cut short, is refused;
// its form on disk is {"data", "tag"}, the tag over the parts and the
// data, which replicas of one version read of each other.
func TestRecord(t *testing.T) {
	ctx := context.Background()
	k := newKeeper(t, "")
	m := &memFiles{files: map[string][]byte{}}
	dir := entrypoint.OutDir + "/.mcp-answers"
	data := []byte(`{"confirm-1":{"action":"accept"}}`)
	if err := k.WriteRecord(ctx, m, dir, "id1.in", data, "id1", "in"); err != nil {
		t.Fatal(err)
	}
	got, err := k.ReadRecord(ctx, m, dir, "id1.in", 1<<20, "id1", "in")
	if err != nil || string(got) != string(data) {
		t.Fatalf("ReadRecord = %s, %v", got, err)
	}
	// Refusals name the record as the answers between replicas always
	// did ("ID.kind ..."); the tasks name theirs (RecordError.What).
	_, err = k.ReadRecord(ctx, m, dir, "id1.in", 1<<20, "id2", "in")
	var re *RecordError
	if !errors.As(err, &re) || !re.Tampered || err.Error() != "id1.in does not carry the bridge's tag" {
		t.Errorf("a record read under other parts: %v", err)
	}
	if _, err := k.ReadRecord(ctx, m, dir, "id1.out", 1<<20, "id1", "out"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing record: %v, want fs.ErrNotExist", err)
	}
	raw := m.files[dir+"/id1.in"]
	var disk map[string]json.RawMessage
	if err := json.Unmarshal(raw, &disk); err != nil || len(disk) != 2 || string(disk["data"]) != string(data) {
		t.Fatalf("the record on disk is %s", raw)
	}
	var tag string
	json.Unmarshal(disk["tag"], &tag)
	if tag != k.Keys.Tag("id1", "in", string(data)) {
		t.Errorf("the record's tag is %s, want the tag of its parts and data", tag)
	}
	forged, _ := json.Marshal(map[string]any{"data": json.RawMessage(`{"confirm-1":{"action":"decline"}}`), "tag": tag})
	m.files[dir+"/id1.in"] = forged
	if _, err := k.ReadRecord(ctx, m, dir, "id1.in", 1<<20, "id1", "in"); err == nil {
		t.Error("a record with other data under the old tag was read")
	}
	m.files[dir+"/id1.in"] = raw[:len(raw)/2]
	_, err = k.ReadRecord(ctx, m, dir, "id1.in", 1<<20, "id1", "in")
	if !errors.As(err, &re) || re.Tampered || !strings.HasPrefix(err.Error(), "id1.in is incomplete or not a bridge's: ") {
		t.Errorf("a record cut short: %v", err)
	}
}
