package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

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
	err = e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: &lifecycle.LimitedWriter{W: &stderr, N: 4 << 10}})
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
	return lifecycle.StreamOut(ctx, func(ctx context.Context, w io.Writer) error {
		err := c.a.execIn(ctx, c.name, []string{"python3", "-c", lifecycle.TarOut, dir}, nil, w)
		if exitCode(err) == lifecycle.TarNoDir {
			err = fmt.Errorf("%w: %s", fs.ErrNotExist, dir)
		}
		return err
	})
}

// CopyIn implements lifecycle.Copier.
func (c *kubeContainerOps) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	err := c.a.execIn(ctx, c.name, []string{"python3", "-c", lifecycle.TarIn, dir}, r, io.Discard)
	if exitCode(err) == lifecycle.TarNoDir {
		return fmt.Errorf("%w: %s", fs.ErrNotExist, dir)
	}
	return err
}
