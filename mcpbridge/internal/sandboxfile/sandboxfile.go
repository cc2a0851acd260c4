// Package sandboxfile keeps the bridge's files in a sandbox: files one
// bridge replica writes into a directory of the sandbox's files-out mount
// and any replica reads back (the whole outputs of a handle's calls, the
// records of tasks, the answers carried to a waiting call, the servers
// granted to a handle's sandbox). The engine writes and reads them
// through its archive API, never the sandbox's runtime, so that no
// replica disturbs a call another runs. Records carry a tag under the
// replicas' shared handle key (WriteRecord, ReadRecord): the sandbox's
// code can delete them, never forge them.
package sandboxfile

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
)

// Files reaches the files of one sandbox: through the session that
// drives it (Session), or through the engine for a replica that does not
// (Engine).
type Files interface {
	// CopyIn extracts the tar stream r into the directory dir.
	CopyIn(ctx context.Context, dir string, r io.Reader) error
	// ReadFile returns the regular file rel under the directory root, at
	// most max bytes; an error wrapping fs.ErrNotExist when it is not
	// there.
	ReadFile(ctx context.Context, root, rel string, max int64) ([]byte, error)
}

// Session returns the Files of the sandbox s drives: its attached
// session, with no inspection of the container, and without waiting for
// a call in flight.
func Session(s *entrypoint.Session) Files { return sessionFiles{s} }

// sessionFiles is the Files of a sandbox through its session.
type sessionFiles struct{ s *entrypoint.Session }

func (f sessionFiles) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	return f.s.CopyInNow(ctx, dir, r)
}

func (f sessionFiles) ReadFile(ctx context.Context, root, rel string, max int64) ([]byte, error) {
	return f.s.ReadFile(ctx, root, rel, max)
}

// Engine returns the Files of the sandbox sb, which this replica does
// not drive, reached through eng (engine.SandboxFiles).
func Engine(eng engine.Engine, sb handle.Sandbox) Files { return engineFiles{eng, sb} }

// engineFiles is the Files of a sandbox through the engine.
type engineFiles struct {
	eng engine.Engine
	sb  handle.Sandbox
}

func (f engineFiles) files(ctx context.Context) (engine.Files, error) {
	if !engine.MayBe[engine.FileReacher](f.eng) {
		return nil, errors.New("this engine cannot reach a sandbox's files")
	}
	return engine.SandboxFiles(ctx, f.eng, f.sb.Engine, f.sb.Ref)
}

func (f engineFiles) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	files, err := f.files(ctx)
	if err != nil {
		return err
	}
	return files.CopyIn(ctx, dir, r)
}

func (f engineFiles) ReadFile(ctx context.Context, root, rel string, max int64) ([]byte, error) {
	files, err := f.files(ctx)
	if err != nil {
		return nil, err
	}
	rc, _, err := files.OpenFile(ctx, root, rel, max)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// A Keeper writes the bridge's files into sandboxes and reads them back.
type Keeper struct {
	// Owner is the sandbox user, "uid[:gid]", who owns what the keeper
	// writes (65534 for what is not a number).
	Owner string
	// Keys tags records and checks their tags (WriteRecord, ReadRecord).
	Keys Tagger
}

// A Tagger tags values under a key and checks their tags
// (*handle.Keyring).
type Tagger interface {
	Tag(parts ...string) string
	CheckTag(tag string, parts ...string) bool
}

// Write writes data as the file name of dir, a directory under
// entrypoint.OutDir made when missing, in the sandbox of f: readable by
// the sandbox user only.
func (k *Keeper) Write(ctx context.Context, f Files, dir, name string, data []byte) error {
	rel, ok := strings.CutPrefix(dir, entrypoint.OutDir+"/")
	if !ok || rel == "" {
		return fmt.Errorf("writing %s: not a directory under %s", dir, entrypoint.OutDir)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	uid, gid := ids(k.Owner)
	parts := strings.Split(rel, "/")
	for i := range parts {
		d := strings.Join(parts[:i+1], "/") + "/"
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o700, Uid: uid, Gid: gid, ModTime: now})
	}
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel + "/" + name, Mode: 0o600, Size: int64(len(data)), Uid: uid, Gid: gid, ModTime: now})
	tw.Write(data)
	if err := tw.Close(); err != nil {
		return fmt.Errorf("packing %s: %w", name, err)
	}
	return f.CopyIn(ctx, entrypoint.OutDir, &buf)
}

// Read returns the file name of dir in the sandbox of f, at most max
// bytes; an error wrapping fs.ErrNotExist when it is not there.
func (k *Keeper) Read(ctx context.Context, f Files, dir, name string, max int64) ([]byte, error) {
	return f.ReadFile(ctx, dir, name, max)
}

// A record is a file of JSON data with a tag under the handle key, so
// that neither the sandbox's code (which can write where records are
// kept) nor a file read while it is being written passes for one. Its
// form on disk is what replicas of one version read of each other:
// {"data": DATA, "tag": TAG}, TAG being Keys.Tag of the record's parts
// and DATA as text.
type record struct {
	Data json.RawMessage `json:"data"`
	Tag  string          `json:"tag"`
}

// WriteRecord writes data, a JSON value, as the record name of dir in
// the sandbox of f (as Write does), tagged with parts and data: the
// reader names the same parts.
func (k *Keeper) WriteRecord(ctx context.Context, f Files, dir, name string, data []byte, parts ...string) error {
	raw, err := json.Marshal(record{Data: data, Tag: k.Keys.Tag(append(slices.Clip(parts), string(data))...)})
	if err != nil {
		return fmt.Errorf("encoding %s: %w", name, err)
	}
	return k.Write(ctx, f, dir, name, raw)
}

// ReadRecord returns the data of the record name of dir in the sandbox
// of f, at most max bytes, once it is whole and its tag, with parts, is
// good; an error wrapping fs.ErrNotExist when it is not there, a
// *RecordError when what is there is no record of the bridge's.
func (k *Keeper) ReadRecord(ctx context.Context, f Files, dir, name string, max int64, parts ...string) ([]byte, error) {
	raw, err := k.Read(ctx, f, dir, name, max)
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, &RecordError{What: name, Err: err}
	}
	if !k.Keys.CheckTag(r.Tag, append(slices.Clip(parts), string(r.Data))...) {
		return nil, &RecordError{What: name, Tampered: true}
	}
	return r.Data, nil
}

// A RecordError says a file read as a record is none of the bridge's:
// cut short or not one (Err says why it does not decode), or with a tag
// that does not match (Tampered).
type RecordError struct {
	// What names the record in the error: its file name, or what the
	// reader calls it.
	What     string
	Tampered bool
	Err      error
}

func (e *RecordError) Error() string {
	if e.Tampered {
		return e.What + " does not carry the bridge's tag"
	}
	return fmt.Sprintf("%s is incomplete or not a bridge's: %v", e.What, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// ids returns the UID and GID of a sandbox user "uid[:gid]" (65534 for
// what is not a number).
func ids(user string) (int, int) {
	uid, gid := 65534, 65534
	u, g, _ := strings.Cut(user, ":")
	fmt.Sscanf(u, "%d", &uid)
	if g == "" {
		gid = uid
	} else {
		fmt.Sscanf(g, "%d", &gid)
	}
	return uid, gid
}
