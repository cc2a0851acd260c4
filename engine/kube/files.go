package kube

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
)

// The files of a sandbox pod pass through its own Python, run with
// pods/exec (the API has no archive calls, and the image may have no
// tar): a tar stream out of the pod, parsed by the host as hostile input
// (openTarFile: no links followed, sizes bounded), and one into it,
// extracted by a strict extractor (directories and regular files only,
// relative names without "..", no special modes). Such a process's
// parent is outside the pod's PID namespace, so the runtime's clean-up of
// stray processes spares it, as it spares relays.

// kubeNoDir is the exit code of the helpers when the directory is missing.
const kubeNoDir = 3

// kubeTarOut writes to stdout a tar of the directory argv[1], as the
// engines' archive calls do: its base name first, links as links.
const kubeTarOut = `import os, sys, tarfile
d = sys.argv[1]
if not os.path.lexists(d):
    sys.exit(3)
t = tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.PAX_FORMAT)
t.add(d, arcname=os.path.basename(d), recursive=True)
t.close()
sys.stdout.buffer.flush()
`

// kubeTarIn extracts the tar on stdin into the directory argv[1]:
// directories and regular files only, relative names without "..", no
// special modes. It runs as the sandbox user: a directory's mode is set
// once everything is extracted, so that a read-only one (0555) is filled
// first.
const kubeTarIn = `import os, sys, tarfile
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

// execIn runs cmd in the pod's container with stdin (nil: none), its
// standard output to stdout; it returns the command's error, with its
// standard error.
func (a *kubeAPI) execIn(ctx context.Context, pod string, cmd []string, stdin io.Reader, stdout io.Writer) error {
	req := a.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(a.ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: kubeContainer, Command: cmd, Stdin: stdin != nil, Stdout: true, Stderr: true},
			scheme.ParameterCodec)
	e, err := a.executor(req.URL().String())
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	err = e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: &limitedWriter{w: &stderr, n: 4 << 10}})
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("%w: %s", err, msg)
		}
		return err
	}
	return nil
}

// exitCode returns the exit code of a command that execIn ran, or -1.
func exitCode(err error) int {
	var ce exec.CodeExitError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return -1
}

// CopyOut implements lifecycle.Copier.
func (c *kubeContainerOps) CopyOut(ctx context.Context, dir string) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		err := c.a.execIn(ctx, c.name, []string{"python3", "-c", kubeTarOut, dir}, nil, pw)
		if exitCode(err) == kubeNoDir {
			err = fmt.Errorf("%w: %s", fs.ErrNotExist, dir)
		}
		pw.CloseWithError(err)
	}()
	br := bufio.NewReaderSize(pr, 64<<10)
	if _, err := br.Peek(1); err != nil && !errors.Is(err, io.EOF) {
		cancel()
		pr.Close()
		return nil, err
	}
	return &cancelReader{Reader: br, close: func() error { cancel(); return pr.Close() }}, nil
}

// CopyIn implements lifecycle.Copier.
func (c *kubeContainerOps) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	err := c.a.execIn(ctx, c.name, []string{"python3", "-c", kubeTarIn, dir}, r, io.Discard)
	if exitCode(err) == kubeNoDir {
		return fmt.Errorf("%w: %s", fs.ErrNotExist, dir)
	}
	return err
}

// A cancelReader is a reader whose Close ends what feeds it.
type cancelReader struct {
	io.Reader
	close func() error
}

func (r *cancelReader) Close() error { return r.close() }

// A limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// parseURL parses a request URL of client-go's.
func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("the API server's URL: %w", err)
	}
	return u, nil
}
