package entrypoint

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// Sentinel errors of the files a session exchanges with its sandbox.
var (
	// ErrSandboxGone reports a file of a sandbox that is no longer the
	// session's: it was stopped (idle, crash, timeout) and its files
	// went with it.
	ErrSandboxGone = errors.New("the sandbox that wrote the file is gone")
	// ErrNoFiles reports an engine whose sandboxes have no file access.
	ErrNoFiles = errors.New("this engine's sandboxes have no file access")
	// ErrInputTooLarge reports an input directory over its limit.
	ErrInputTooLarge = errors.New("the input directory is over its size limit")
)

// Defaults of the input directory's limits.
const (
	defaultInputMaxBytes = 64 << 20
	// maxInputEntries bounds the files and directories copied in.
	maxInputEntries = 10000
	// tmpfsPage is what the sandbox's tmpfs charges for a file at least.
	tmpfsPage = 4096
)

// PhaseInput is the phase of a session's start that copies the input
// directory in (engine.StartTrace), as the engine's own filling of InDir
// at start is.
const PhaseInput = engine.PhaseInput

// OpenFile opens the file at path in the session's sandbox sandboxID (a
// Result's SandboxID) through the engine, for at most max bytes (<= 0: no
// limit). It fails with ErrSandboxGone when that sandbox is no longer the
// session's, and with the engine's errors (engine.ErrNotRegular,
// engine.ErrFileTooLarge, fs.ErrNotExist) otherwise. Only paths under
// OutDir are served, read from the engine's archive of OutDir: a symbolic
// link the sandbox left there, on the file or on one of its directories,
// is refused (engine.ErrNotRegular), never followed.
func (s *Session) OpenFile(ctx context.Context, sandboxID, path string, max int64) (io.ReadCloser, int64, error) {
	if err := checkOutPath(path); err != nil {
		return nil, 0, fmt.Errorf("opening a file: a %v", err)
	}
	s.mu.Lock()
	ctr := s.ctr
	s.mu.Unlock()
	if ctr == nil || ctr.sb.ID() != sandboxID || ctr.Err() != nil {
		return nil, 0, ErrSandboxGone
	}
	files, ok := ctr.sb.(engine.Files)
	if !ok {
		return nil, 0, ErrNoFiles
	}
	return files.OpenFile(ctx, OutDir, strings.TrimPrefix(path, OutDir+"/"), max)
}

// An input is the content of the input directory, as scanned before a
// sandbox starts.
type input struct {
	dir     string
	entries []inputEntry
	bytes   int64
}

// An inputEntry is one file or directory of an input, by its path
// relative to the input's directory.
type inputEntry struct {
	rel     string
	dir     bool
	size    int64
	modTime time.Time
}

// scanInput lists the regular files and directories under dir, failing
// with ErrInputTooLarge when they hold more than max bytes or more than
// maxInputEntries entries. Symbolic links and special files are skipped.
func scanInput(dir string, max int64, log func(msg string, args ...any)) (*input, error) {
	// The directory itself may be a symbolic link (WalkDir does not
	// follow one at its root); links inside it are skipped.
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the input directory: %w", err)
	}
	dir = resolved
	in := &input{dir: dir}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			if !d.IsDir() {
				return fmt.Errorf("%s is not a directory", dir)
			}
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			in.entries = append(in.entries, inputEntry{rel: rel, dir: true})
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			in.bytes += info.Size()
			if in.bytes > max {
				return fmt.Errorf("%w: %s holds more than %s", ErrInputTooLarge, dir, engine.FormatBytes(max))
			}
			in.entries = append(in.entries, inputEntry{rel: rel, size: info.Size(), modTime: info.ModTime()})
		default:
			log("input directory: skipping what is not a regular file or directory", "path", p)
			return nil
		}
		if len(in.entries) > maxInputEntries {
			return fmt.Errorf("%w: %s holds more than %d files and directories", ErrInputTooLarge, dir, maxInputEntries)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the input directory: %w", err)
	}
	return in, nil
}

// fingerprint identifies the input's contents as scanned: every entry's
// path, kind, size and modification time.
func (in *input) fingerprint() string {
	h := sha256.New()
	for _, e := range in.entries {
		fmt.Fprintf(h, "%q %t %d %d\n", e.rel, e.dir, e.size, e.modTime.UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// inputCurrent reports whether ctr's /workspace/in still holds what
// Options.InputDir holds now: true without an input directory, false when
// the directory changed since the copy or cannot be read now.
func (s *Session) inputCurrent(ctr *container) bool {
	if s.opts.InputDir == "" {
		return true
	}
	in, err := scanInput(s.opts.InputDir, s.opts.inputMaxBytes(), func(string, ...any) {})
	return err == nil && in.fingerprint() == ctr.inputPrint
}

// mountBytes is the size of the sandbox mount the input needs.
func (in *input) mountBytes() int64 {
	return in.bytes + int64(len(in.entries)+1)*tmpfsPage + 1<<20
}

// writeTar writes the input as a tar stream: owned by root, files
// read-only (0444), directories 0555, so the sandbox user can read and
// not change them. A file that changed size since the scan fails it.
func (in *input) writeTar(w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, e := range in.entries {
		h := &tar.Header{Name: e.rel, Uid: 0, Gid: 0, ModTime: e.modTime, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, e.rel+"/", 0o555
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o444, e.size
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if err := copyFile(tw, filepath.Join(in.dir, filepath.FromSlash(e.rel)), e.size); err != nil {
			return err
		}
	}
	return tw.Close()
}

// copyFile copies exactly size bytes of the file at p to w.
func copyFile(w io.Writer, p string, size int64) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, size))
	if err != nil {
		return err
	}
	var more [1]byte
	if m, _ := f.Read(more[:]); n != size || m > 0 {
		return fmt.Errorf("%s changed while it was copied (it had %d bytes)", p, size)
	}
	return nil
}

// CopyIn extracts the tar stream r into the directory dir of the
// session's sandbox (starting one when none runs), keeping the owners and
// modes of its headers: the engine writes it, as root, into a mount of
// the sandbox such as engine.InDir or a volume.
func (s *Session) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	ctr, release, err := s.live(ctx)
	if err != nil {
		return err
	}
	defer release()
	return ctr.copyIn(ctx, dir, r)
}

// copyIn extracts the tar stream r into dir of the container.
func (ctr *container) copyIn(ctx context.Context, dir string, r io.Reader) error {
	files, ok := ctr.sb.(engine.Files)
	if !ok {
		return ErrNoFiles
	}
	if err := files.CopyIn(ctx, dir, r); err != nil {
		return fmt.Errorf("copying into %s: %w", dir, err)
	}
	return nil
}

// copyInput copies in into the sandbox's InDir.
func copyInput(ctx context.Context, sb engine.Sandbox, in *input) error {
	files, ok := sb.(engine.Files)
	if !ok {
		return ErrNoFiles
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(in.writeTar(pw)) }()
	err := files.CopyIn(ctx, engine.InDir, pr)
	pr.CloseWithError(errors.New("copy ended"))
	if err != nil {
		return fmt.Errorf("copying the input directory in: %w", err)
	}
	return nil
}
