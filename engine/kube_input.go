package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// The input of a sandbox pod (Spec.Input) is extracted into InDir by the
// pod's init container (kubePod), the only container that mounts it
// writable: the bridge attaches to it (pods/attach), streams the tar to
// its standard input and closes it, and waits for it to exit 0; only then
// does the kubelet start the sandbox's container, which mounts InDir
// read-only. An extractor that refuses the tar, or a mount too small for
// it, ends the container with an error, which the start reports. The
// other backends take no input at start: their engine copies it in, as
// root, once the sandbox runs (Files.CopyIn), and InputFilled tells the
// caller which happened.

// PhaseInput is the phase of a start in which an engine fills InDir from
// Spec.Input (Kubernetes: the input container's run).
const PhaseInput = "input"

// An InputFiller is a Sandbox whose engine may have filled InDir from
// Spec.Input as it started, before the sandbox's process ran.
type InputFiller interface {
	// InputFilled reports whether InDir was filled from Spec.Input.
	InputFilled() bool
}

// InputFilled reports whether sb's engine filled InDir from Spec.Input
// as sb started; when not, the caller copies the input in (Files.CopyIn).
func InputFilled(sb Sandbox) bool {
	f, ok := sb.(InputFiller)
	return ok && f.InputFilled()
}

// An inputAPI is a containerAPI that fills InDir from Spec.Input between
// the creation of a container and its start (the Kubernetes backend).
type inputAPI interface {
	// fillInput runs Spec.Input of spec into the created container id's
	// InDir; it returns once the files are in place, or why they are not.
	fillInput(ctx context.Context, id string, spec Spec) error
}

// fillInput fills the created container's InDir from spec.Input when the
// backend can, and records it on sb.
func (e *containerEngine) fillInput(ctx context.Context, sb *containerSandbox, spec Spec) error {
	f, ok := e.api.(inputAPI)
	if !ok || spec.Input == nil || spec.InBytes <= 0 {
		return nil
	}
	began := time.Now()
	if err := f.fillInput(ctx, sb.id, spec); err != nil {
		return fmt.Errorf("filling %s: %w", InDir, err)
	}
	tracePhase(ctx, PhaseInput, began)
	sb.inputFilled = true
	return nil
}

// InputFilled implements InputFiller.
func (s *containerSandbox) InputFilled() bool { return s.inputFilled }

// InputFilled implements InputFiller.
func (p *placedSandbox) InputFilled() bool { return InputFilled(p.Sandbox) }

var (
	_ InputFiller = (*containerSandbox)(nil)
	_ InputFiller = (*placedSandbox)(nil)
)

var _ inputAPI = (*kubeAPI)(nil)

// fillInput implements inputAPI.
func (a *kubeAPI) fillInput(ctx context.Context, pod string, spec Spec) error {
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
	serr := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: pr, Stderr: &limitedWriter{w: &stderr, n: 4 << 10}})
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
