package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
)

// A sandboxIO reads and writes the files of a task's sandbox: through
// the session that drives it (sessionIO), or through the engine for a
// replica that does not (engineIO).
type sandboxIO interface {
	copyIn(ctx context.Context, dir string, r io.Reader) error
	readFile(ctx context.Context, root, rel string, max int64) ([]byte, error)
}

// sessionIO is the sandboxIO of the replica that drives the sandbox: its
// attached session, with no inspection of the container.
type sessionIO struct{ s *entrypoint.Session }

func (o sessionIO) copyIn(ctx context.Context, dir string, r io.Reader) error {
	return o.s.CopyInNow(ctx, dir, r)
}

func (o sessionIO) readFile(ctx context.Context, root, rel string, max int64) ([]byte, error) {
	return o.s.ReadFile(ctx, root, rel, max)
}

// engineIO is the sandboxIO of a replica that does not drive the sandbox
// sb: the engine reaches its files (engine.FileReacher).
type engineIO struct {
	eng engine.Engine
	sb  handle.Sandbox
}

func (o engineIO) files(ctx context.Context) (engine.Files, error) {
	if !engine.MayBe[engine.FileReacher](o.eng) {
		return nil, errors.New("this engine cannot reach a sandbox's files")
	}
	return engine.SandboxFiles(ctx, o.eng, o.sb.Engine, o.sb.Ref)
}

func (o engineIO) copyIn(ctx context.Context, dir string, r io.Reader) error {
	files, err := o.files(ctx)
	if err != nil {
		return err
	}
	return files.CopyIn(ctx, dir, r)
}

func (o engineIO) readFile(ctx context.Context, root, rel string, max int64) ([]byte, error) {
	files, err := o.files(ctx)
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

// sandboxIDs returns the UID and GID of a sandbox user "uid[:gid]"
// (65534 for what is not a number).
func sandboxIDs(user string) (int, int) {
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
