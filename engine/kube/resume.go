package kube

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// A persistent sandbox pod (one behind a handle) is resumed by another
// replica as a container is on Docker: a relay run in it through
// pods/exec connects to the interpreter, whose own standard input stays
// open (the pod's container is not StdinOnce), so no replica's leaving
// ends it. The pod's name is the handle's container reference.

// InspectSandbox implements lifecycle.ExecAPI.
func (a *kubeAPI) InspectSandbox(ctx context.Context, ref string) (lifecycle.SandboxState, error) {
	p, err := a.cs.CoreV1().Pods(a.ns).Get(ctx, ref, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return lifecycle.SandboxState{}, fmt.Errorf("%w: pod %s does not exist in namespace %s (it was removed)", engine.ErrNoSandbox, ref, a.ns)
	}
	if err != nil {
		return lifecycle.SandboxState{}, fmt.Errorf("reading pod %s: %w", ref, a.explain(err, "get", "pods"))
	}
	st := lifecycle.SandboxState{ID: p.Name, Labels: p.Labels}
	if ex, ended := kubeExit(p); ended {
		st.ExitCode = ex.Code
		return st, nil
	}
	running, err := kubeRunning(p)
	if err != nil {
		return lifecycle.SandboxState{}, fmt.Errorf("%w: pod %s: %w", engine.ErrNoSandbox, ref, err)
	}
	if !running {
		return lifecycle.SandboxState{}, fmt.Errorf("%w: pod %s has not started (%s)", engine.ErrNoSandbox, ref, p.Status.Phase)
	}
	st.Running = true
	return st, nil
}

// ExecAttach implements lifecycle.ExecAPI: cmd runs through pods/exec with its
// standard streams attached (WebSocket, SPDY when the server refuses the
// upgrade). A stream that fails is not attached again, unlike the pod's
// own (attach): a resumed sandbox is left, and attached afresh by the
// next call.
func (a *kubeAPI) ExecAttach(_ context.Context, id string, cmd []string, stdout, stderr *lifecycle.Pipe) (io.WriteCloser, <-chan struct{}, func(), error) {
	req := a.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(a.ns).Name(id).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: kubeContainer, Command: cmd, Stdin: true, Stdout: true, Stderr: true},
			scheme.ParameterCodec)
	ex, err := a.executor(req.URL().String())
	if err != nil {
		return nil, nil, nil, err
	}
	inR, inW := io.Pipe()
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := ex.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: inR, Stdout: stdout, Stderr: stderr})
		if err == nil {
			err = io.EOF
		}
		stdout.CloseWithError(err)
		stderr.CloseWithError(err)
		inR.CloseWithError(err)
	}()
	return inW, done, cancel, nil
}

// Resume implements Resumer.
func (k *Kubernetes) Resume(ctx context.Context, engineName, ref string, cmd []string) (engine.Sandbox, error) {
	return k.e.Resume(ctx, engineName, ref, cmd)
}

// RemoveSandbox implements Resumer.
func (k *Kubernetes) RemoveSandbox(ctx context.Context, engineName, ref string) error {
	return k.e.RemoveSandbox(ctx, engineName, ref)
}

// SweepExited implements Sweeper.
func (k *Kubernetes) SweepExited(ctx context.Context, keyID string) (int, error) {
	return k.e.SweepExited(ctx, keyID)
}
