package lifecycle

import (
	"bufio"
	"context"
	"errors"
	"io"
)

// The files of a sandbox that the engine's archive calls cannot reach
// (a Kubernetes pod, whose API has none; a mount inside gVisor, which the
// daemon does not see) pass through the sandbox's own Python, run with
// the engine's exec (the image may have no tar): a tar stream out of the
// sandbox, parsed by the host as hostile input (openTarFile: no links
// followed, sizes bounded), and one into it, extracted by a strict
// extractor (directories and regular files only, relative names without
// "..", no special modes). Such a process's parent is outside the
// sandbox's PID namespace, so the runtime's clean-up of stray processes
// spares it, as it spares relays.

// TarNoDir is the exit code of the helpers when the directory is missing.
const TarNoDir = 3

// TarOut writes to stdout a tar of the directory argv[1], as the
// engines' archive calls do: its base name first, links as links.
const TarOut = `import os, sys, tarfile
d = sys.argv[1]
if not os.path.lexists(d):
    sys.exit(3)
t = tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.PAX_FORMAT)
t.add(d, arcname=os.path.basename(d), recursive=True)
t.close()
sys.stdout.buffer.flush()
`

// TarIn extracts the tar on stdin into the directory argv[1]:
// directories and regular files only, relative names without "..", no
// special modes. It runs as the sandbox user: a directory's mode is set
// once everything is extracted, so that a read-only one (0555) is filled
// first.
const TarIn = `import os, sys, tarfile
d = sys.argv[1]
if not os.path.isdir(d):
    sys.exit(3)
dirs = []
t = tarfile.open(fileobj=sys.stdin.buffer, mode="r|")
for m in t:
    n = m.name
    parts = [p for p in n.split("/") if p not in ("", ".")]
    if n.startswith("/") or ".." in parts or not parts:
        sys.exit("refused entry %r" % n)
    p = os.path.join(d, *parts)
    if m.isdir():
        os.makedirs(p, exist_ok=True)
        dirs.append((p, m.mode & 0o777))
    elif m.isfile():
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if os.path.islink(p):
            os.unlink(p)
        src = t.extractfile(m)
        tmp = p + ".mcp-partial"
        with open(tmp, "wb") as f:
            while True:
                b = src.read(1 << 16)
                if not b:
                    break
                f.write(b)
        os.chmod(tmp, m.mode & 0o777)
        os.replace(tmp, p)
    else:
        sys.exit("refused entry %r: not a directory or regular file" % n)
for p, mode in reversed(dirs):
    os.chmod(p, mode)
`

// StreamOut returns the stream that produce writes, on a goroutine of its
// own, once its first byte (or its end) came: an error before any byte
// is the call's. Closing the stream cancels produce's context.
func StreamOut(ctx context.Context, produce func(ctx context.Context, w io.Writer) error) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	go func() { pw.CloseWithError(produce(ctx, pw)) }()
	br := bufio.NewReaderSize(pr, 64<<10)
	if _, err := br.Peek(1); err != nil && !errors.Is(err, io.EOF) {
		cancel()
		pr.Close()
		return nil, err
	}
	return &cancelReader{Reader: br, close: func() error { cancel(); return pr.Close() }}, nil
}

// A cancelReader is a reader whose Close ends what feeds it.
type cancelReader struct {
	io.Reader
	close func() error
}

func (r *cancelReader) Close() error { return r.close() }

// A LimitedWriter keeps the first N bytes written to it in W and takes
// the rest without keeping it (a command's standard error, for its
// error).
type LimitedWriter struct {
	W io.Writer
	N int
}

func (l *LimitedWriter) Write(p []byte) (int, error) {
	if l.N > 0 {
		k := min(len(p), l.N)
		l.W.Write(p[:k])
		l.N -= k
	}
	return len(p), nil
}
