package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
)

// An Engine may do more than Start: the other interfaces of this package
// that an Engine may implement (Pinger, Describer, Resumer, Sweeper,
// FileReacher, MemoryReader, Volumes, ImageIDs, EgressChecker) are its
// optional capabilities. An engine that stands for another (auto.Auto,
// for the backend it connects on first use) forwards none of them: it
// is a Wrapper, and As finds the capability on the engine it unwraps to.
// An engine over several named ones (auto.Multi) is a Router: the
// capabilities that act on one sandbox take the name of the sandbox's
// engine, and the functions of this file (Resume, RemoveSandbox,
// SandboxFiles, SandboxMemory) route them to it.

// A Wrapper is an Engine that stands for another, which it may connect
// only on first use.
type Wrapper interface {
	Engine
	// Unwrap returns the engine it stands for, connecting it when it is
	// not yet connected.
	Unwrap(ctx context.Context) (Engine, error)
}

// A Router is an Engine over several engines, each with a name (an
// Endpoint's Name): the name of a sandbox's engine, as a handle keeps it,
// picks one.
type Router interface {
	Engine
	// Route returns the engine called name, or an error wrapping
	// ErrOtherEngine when none is.
	Route(name string) (Engine, error)
}

// As returns the first engine of e's chain that is a T, as errors.As
// does for an error's: e, then, while the engine is a Wrapper, the engine
// it unwraps to. It fails with the error of a Wrapper that cannot connect
// its engine (wrapping ErrNoEngine), or with an error wrapping
// errors.ErrUnsupported when no engine of the chain is a T.
func As[T any](ctx context.Context, e Engine) (T, error) {
	var zero T
	for e != nil {
		if t, ok := e.(T); ok {
			return t, nil
		}
		w, ok := e.(Wrapper)
		if !ok {
			break
		}
		next, err := w.Unwrap(ctx)
		if err != nil {
			return zero, err
		}
		e = next
	}
	return zero, fmt.Errorf("the %s engine is no %s: %w", nameOf(e), reflect.TypeFor[T]().Name(), errors.ErrUnsupported)
}

// MayBe reports whether e is a T, or may turn out to be one: e is a
// Wrapper, whose engine is known once connected, or a Router, whose
// engines are used by name. A caller that sets up the use of a
// capability once (a sweep, a sampler) asks it without connecting
// anything; each use then calls As, or a function of this file.
func MayBe[T any](e Engine) bool {
	switch e.(type) {
	case T, Wrapper, Router:
		return true
	}
	return false
}

// nameOf names e in errors: its Name, else its type.
func nameOf(e Engine) string {
	if n, ok := e.(interface{ Name() string }); ok {
		return n.Name()
	}
	if e == nil {
		return "missing"
	}
	return fmt.Sprintf("%T", e)
}

// on returns the capability T of the engine of e that engineName names,
// with the name to pass it: when e is a Router, the engine Route returns
// and "" (routed), else e and engineName (a single engine refuses a name
// itself).
func on[T any](ctx context.Context, e Engine, engineName string) (_ T, name string, routed bool, _ error) {
	var zero T
	if r, ok := e.(Router); ok {
		to, err := r.Route(engineName)
		if err != nil {
			return zero, "", false, err
		}
		t, err := As[T](ctx, to)
		if err != nil {
			return zero, "", false, fmt.Errorf("engine %s: %w", engineName, err)
		}
		return t, "", true, nil
	}
	t, err := As[T](ctx, e)
	return t, engineName, false, err
}

// Resume runs cmd in the running sandbox ref of the engine of e named
// engineName (Resumer.Resume). A sandbox resumed on one of several
// engines names its engine (an Engine method), as one a Router started
// does.
func Resume(ctx context.Context, e Engine, engineName, ref string, cmd []string) (Sandbox, error) {
	r, name, routed, err := on[Resumer](ctx, e, engineName)
	if err != nil {
		return nil, fmt.Errorf("resuming a sandbox: %w", err)
	}
	sb, err := r.Resume(ctx, name, ref, cmd)
	if err != nil || !routed {
		return sb, err
	}
	return &namedSandbox{Sandbox: sb, name: engineName}, nil
}

// RemoveSandbox stops and removes the sandbox ref of the engine of e
// named engineName (Resumer.RemoveSandbox).
func RemoveSandbox(ctx context.Context, e Engine, engineName, ref string) error {
	r, name, _, err := on[Resumer](ctx, e, engineName)
	if err != nil {
		return fmt.Errorf("removing a sandbox: %w", err)
	}
	return r.RemoveSandbox(ctx, name, ref)
}

// SandboxFiles returns the files of the running sandbox ref of the engine
// of e named engineName (FileReacher.SandboxFiles).
func SandboxFiles(ctx context.Context, e Engine, engineName, ref string) (Files, error) {
	r, name, _, err := on[FileReacher](ctx, e, engineName)
	if err != nil {
		return nil, fmt.Errorf("reaching a sandbox's files: %w", err)
	}
	return r.SandboxFiles(ctx, name, ref)
}

// SandboxMemory returns the memory the running sandbox ref of the engine
// of e named engineName uses (MemoryReader.SandboxMemory).
func SandboxMemory(ctx context.Context, e Engine, engineName, ref string) (int64, error) {
	r, name, _, err := on[MemoryReader](ctx, e, engineName)
	if err != nil {
		return 0, fmt.Errorf("reading a sandbox's memory: %w", err)
	}
	return r.SandboxMemory(ctx, name, ref)
}

// A namedSandbox is a sandbox resumed on one of several engines: it names
// its engine, as a sandbox a Router started does.
type namedSandbox struct {
	Sandbox
	name string
}

// Engine names the engine the sandbox runs on.
func (s *namedSandbox) Engine() string { return s.name }

// OpenFile implements Files.
func (s *namedSandbox) OpenFile(ctx context.Context, root, rel string, max int64) (io.ReadCloser, int64, error) {
	f, ok := s.Sandbox.(Files)
	if !ok {
		return nil, 0, fmt.Errorf("opening %s: the sandbox's engine has no file access", rel)
	}
	return f.OpenFile(ctx, root, rel, max)
}

// CopyIn implements Files.
func (s *namedSandbox) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	f, ok := s.Sandbox.(Files)
	if !ok {
		return fmt.Errorf("copying into %s: the sandbox's engine has no file access", dir)
	}
	return f.CopyIn(ctx, dir, r)
}

var _ Files = (*namedSandbox)(nil)
