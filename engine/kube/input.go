package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

var _ lifecycle.InputAPI = (*kubeAPI)(nil)

// FillInput implements lifecycle.InputAPI.
func (a *kubeAPI) FillInput(ctx context.Context, pod string, spec engine.Spec) error {
	if err := a.watchPod(ctx, pod, kubeInputStarted); err != nil {
		return fmt.Errorf("waiting for the input container: %w", err)
	}
	req := a.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(a.ns).Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: kubeInputContainer, Stdin: true, Stderr: true}, scheme.ParameterCodec)
	exec, err := a.executor(req.URL().String())
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	wrote := make(chan error, 1)
	go func() {
		err := spec.Input(pw)
		pw.CloseWithError(err)
		wrote <- err
	}()
	var stderr bytes.Buffer
	serr := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: pr, Stderr: &lifecycle.LimitedWriter{W: &stderr, N: 4 << 10}})
	pr.CloseWithError(errors.New("the input container's stream ended"))
	werr := <-wrote
	// Its exit says whether the files are in place; a stream that broke
	// off says less.
	var exited *corev1.ContainerStateTerminated
	err = a.watchPod(ctx, pod, func(p *corev1.Pod) (bool, error) {
		exited = kubeInputExited(p)
		return exited != nil, nil
	})
	switch {
	case err != nil && exited == nil:
		if serr != nil {
			err = fmt.Errorf("%w (the stream: %v)", err, serr)
		}
		return fmt.Errorf("waiting for the input container to exit: %w", err)
	case exited.ExitCode != 0:
		msg := strings.TrimSpace(exited.Message)
		if msg == "" {
			msg = strings.TrimSpace(stderr.String())
		}
		return fmt.Errorf("the input container exited with code %d (%s): %s", exited.ExitCode, exited.Reason, kubeLastLine(msg))
	case werr != nil:
		return fmt.Errorf("writing the input: %w", werr)
	}
	return nil
}

// kubeInputStarted reports whether p's input container runs or ended,
// or why it will not start.
func kubeInputStarted(p *corev1.Pod) (bool, error) {
	if p.DeletionTimestamp != nil {
		return false, fmt.Errorf("pod %s is being deleted", p.Name)
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Name != kubeInputContainer {
			continue
		}
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return true, nil
		}
		if err := kubeStuck(p, cs); err != nil {
			return false, err
		}
	}
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return false, fmt.Errorf("pod %s ended before its input was written: %s", p.Name, kubeEnded(p))
	}
	return false, nil
}

// kubeInputExited returns how p's input container ended, or nil while it
// has not.
func kubeInputExited(p *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Name == kubeInputContainer && cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

// kubeLastLine returns the last line of msg (a Python traceback's ends
// with the error), or msg when it has one.
func kubeLastLine(msg string) string {
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		return msg[i+1:]
	}
	return msg
}
