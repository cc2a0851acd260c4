package lifecycle

import (
	"context"
	"io"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// SandboxFiles implements FileReacher.SandboxFiles for a backend.
func (e *Engine) SandboxFiles(ctx context.Context, engineName, ref string) (engine.Files, error) {
	_, st, err := e.runningSandbox(ctx, engineName, ref, "reaching a sandbox's files")
	if err != nil {
		return nil, err
	}
	return &reachedFiles{c: e.api.Ops(st.ID), id: st.ID}, nil
}

// reachedFiles are the files of a sandbox reached by its container ID.
type reachedFiles struct {
	c  Ops
	id string
}

// OpenFile implements Files.
func (f *reachedFiles) OpenFile(ctx context.Context, root, rel string, max int64) (io.ReadCloser, int64, error) {
	return OpenFileIn(ctx, f.c, f.id, root, rel, max)
}

// CopyIn implements Files.
func (f *reachedFiles) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	return CopyInto(ctx, f.c, f.id, dir, r)
}
