package engine

import (
	"context"
	"fmt"
	"io"
)

// A FileReacher is an Engine that reaches the files of a running sandbox
// it did not start in this process, without running anything in it and
// without attaching to its runtime: another replica may be driving it. A
// bridge reads and writes the records it keeps in a sandbox for every
// replica (a task's) this way.
type FileReacher interface {
	// SandboxFiles returns the files of the running sandbox container
	// ref on the engine named engineName (as for Resumer.Resume); an
	// error wrapping ErrNoSandbox, ErrSandboxExited or ErrOtherEngine
	// when it cannot be reached.
	SandboxFiles(ctx context.Context, engineName, ref string) (Files, error)
}

// sandboxFiles implements FileReacher.SandboxFiles for a backend.
func (e *containerEngine) sandboxFiles(ctx context.Context, engineName, ref string) (Files, error) {
	_, st, err := e.runningSandbox(ctx, engineName, ref, "reaching a sandbox's files")
	if err != nil {
		return nil, err
	}
	return &reachedFiles{c: e.api.ops(st.ID), id: st.ID}, nil
}

// reachedFiles are the files of a sandbox reached by its container ID.
type reachedFiles struct {
	c  containerOps
	id string
}

// OpenFile implements Files.
func (f *reachedFiles) OpenFile(ctx context.Context, root, rel string, max int64) (io.ReadCloser, int64, error) {
	return openFileIn(ctx, f.c, f.id, root, rel, max)
}

// CopyIn implements Files.
func (f *reachedFiles) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	return copyInto(ctx, f.c, f.id, dir, r)
}

// SandboxFiles implements FileReacher.
func (d *Docker) SandboxFiles(ctx context.Context, engineName, ref string) (Files, error) {
	return d.e.sandboxFiles(ctx, engineName, ref)
}

// SandboxFiles implements FileReacher, on a backend that can.
func (a *Auto) SandboxFiles(ctx context.Context, engineName, ref string) (Files, error) {
	b, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	r, ok := b.(FileReacher)
	if !ok {
		return nil, fmt.Errorf("reaching a sandbox's files: the %s backend cannot", b.Name())
	}
	return r.SandboxFiles(ctx, engineName, ref)
}

// SandboxFiles implements FileReacher: on the member engineName names.
func (m *Multi) SandboxFiles(ctx context.Context, engineName, ref string) (Files, error) {
	mb, err := m.member(engineName)
	if err != nil {
		return nil, err
	}
	r, ok := mb.eng.(FileReacher)
	if !ok {
		return nil, fmt.Errorf("reaching a sandbox's files: the %s engine cannot", mb.name)
	}
	return r.SandboxFiles(ctx, "", ref)
}
