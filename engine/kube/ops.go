package kube

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// kubeContainerOps are the calls on one sandbox pod.
type kubeContainerOps struct {
	a    *kubeAPI
	name string
	// uid is the UID of a claimed pod (kubeClaims), whose controller may
	// make a pod of the same name again: that one is a lost sandbox.
	// Zero: the bridge's own pod, which nothing makes again.
	uid types.UID

	mu     sync.Mutex
	cancel context.CancelFunc // ends the attachment
}

// kubeFailFast are the reasons of a waiting container that will not start
// by itself: reported at once rather than waited out.
var kubeFailFast = map[string]bool{
	"ErrImageNeverPull": true, "ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
	"CrashLoopBackOff": true,
}

// running waits until the pod's container runs, or reports why it will
// not: a missing image (ErrImage), a container that cannot be created, a
// pod that ended or was deleted.
func (c *kubeContainerOps) running(ctx context.Context) error {
	err := c.a.watchPod(ctx, c.name, func(p *corev1.Pod) (bool, error) {
		if c.replaced(p) {
			return false, fmt.Errorf("pod %s: %w", c.name, errPodReplaced)
		}
		return kubeRunning(p)
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("waiting for pod %s to run: %w", c.name, err)
	}
	return err
}

// replaced reports whether p is not the pod c was pinned to.
func (c *kubeContainerOps) replaced(p *corev1.Pod) bool {
	return c.uid != "" && p.UID != c.uid
}

// kubeRunning reports whether p's container runs, or the error that says
// it will not.
func kubeRunning(p *corev1.Pod) (bool, error) {
	switch p.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return false, fmt.Errorf("pod %s ended before it was attached: %s", p.Name, kubeEnded(p))
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != kubeContainer {
			continue
		}
		switch {
		case cs.State.Running != nil:
			return true, nil
		case cs.State.Terminated != nil:
			return false, fmt.Errorf("pod %s ended before it was attached: %s", p.Name, kubeEnded(p))
		}
		if err := kubeStuck(p, cs); err != nil {
			return false, err
		}
	}
	// Pending (unschedulable now may be schedulable later, as a node
	// frees memory): waited out, within the start's timeout.
	return false, nil
}

// kubeStuck returns the error of a container of p waiting for a reason
// that will not pass by itself (a missing image is ErrImage), or nil.
func kubeStuck(p *corev1.Pod, cs corev1.ContainerStatus) error {
	w := cs.State.Waiting
	if w == nil || !kubeFailFast[w.Reason] {
		return nil
	}
	err := fmt.Errorf("pod %s: %s: %s", p.Name, w.Reason, w.Message)
	switch w.Reason {
	case "ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName":
		return fmt.Errorf("%w: image %q is not on the node (set MCP_BRIDGE_IMAGE to an image the nodes hold; scripts/provision --kubernetes imports the sandbox images): %w",
			engine.ErrImage, cs.Image, err)
	}
	return err
}

// errPodDeleted reports a pod gone from the API while it was watched.
var errPodDeleted = errors.New("the pod was deleted")

// watchPod watches pod until done reports true or an error, the pod is
// deleted (errPodDeleted), or ctx ends. An API server that cannot be
// reached, or is restarting, is waited out for up to kubeReattachWithin
// (the pod runs on without it).
func (a *kubeAPI) watchPod(ctx context.Context, pod string, done func(*corev1.Pod) (bool, error)) error {
	pods := a.cs.CoreV1().Pods(a.ns)
	sel := fields.OneTermEqualSelector("metadata.name", pod).String()
	var unreachable time.Time // since when the API server cannot be reached
	retry := func(err error) bool {
		if ctx.Err() != nil || !a.transient(err) {
			return false
		}
		if unreachable.IsZero() {
			unreachable = time.Now()
		}
		if time.Since(unreachable) >= kubeReattachWithin {
			return false
		}
		select {
		case <-time.After(time.Second):
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil && retry(err) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return a.explain(err, "list", "pods")
		}
		unreachable = time.Time{}
		if len(list.Items) == 0 {
			return fmt.Errorf("pod %s: %w", pod, errPodDeleted)
		}
		if ok, err := done(&list.Items[0]); ok || err != nil {
			return err
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
		if err != nil && retry(err) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return a.explain(err, "watch", "pods")
		}
	events:
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Deleted:
				w.Stop()
				return fmt.Errorf("pod %s: %w", pod, errPodDeleted)
			case watch.Error:
				break events // the server ended the watch (its resource version expired, say): list again
			}
			if p, ok := ev.Object.(*corev1.Pod); ok {
				if ok, err := done(p); ok || err != nil {
					w.Stop()
					return err
				}
			}
		}
		w.Stop()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// kubeEnded says how a pod's container ended.
func kubeEnded(p *corev1.Pod) string {
	if p.Status.Reason != "" {
		return p.Status.Reason + ": " + p.Status.Message
	}
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return fmt.Sprintf("%s, exit code %d %s", t.Reason, t.ExitCode, t.Message)
		}
	}
	return string(p.Status.Phase)
}

// Attach implements lifecycle.Ops: once the pod runs, its container's
// streams are attached through pods/attach (WebSocket, SPDY when the
// server refuses the upgrade). The process waits for the runtime's
// source on its standard input, so nothing it writes is missed.
func (c *kubeContainerOps) Attach(ctx context.Context, stdout, stderr *lifecycle.Pipe) (io.WriteCloser, <-chan struct{}, error) {
	if err := c.running(ctx); err != nil {
		return nil, nil, err
	}
	exec, err := c.attachExecutor()
	if err != nil {
		return nil, nil, err
	}
	inR, inW := io.Pipe()
	actx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		streams := remotecommand.StreamOptions{Stdin: inR, Stdout: stdout, Stderr: stderr}
		err := exec.StreamWithContext(actx, streams)
		// A stream that failed while the container runs on was lost
		// (the API server restarted, say), not ended: attach again,
		// marking the place for the reader, which resynchronises.
		for err != nil && actx.Err() == nil {
			lost := time.Now()
			again, rerr := c.reattach(actx, err)
			if again == nil {
				if rerr != nil {
					err = rerr
				}
				break
			}
			c.missedStderr(actx, lost, stderr)
			stdout.Break(engine.ErrReattached)
			err = again.StreamWithContext(actx, streams)
		}
		if err == nil {
			err = io.EOF
		}
		stdout.CloseWithError(err)
		stderr.CloseWithError(err)
		inR.CloseWithError(err)
	}()
	return inW, copied, nil
}

const (
	// kubeReattachWithin bounds how long a lost attachment is tried again
	// while the API server cannot be reached or the pod's state is not
	// known; the sandbox is given up after it.
	kubeReattachWithin = 2 * time.Minute
	// kubeSettle is how long a failed stream waits before the pod's state
	// is read: a container that ended has its status updated by then.
	kubeSettle = 2 * time.Second
)

// reattach returns an executor for attaching again to the pod after its
// attachment failed with lost, when the pod's container still runs; nil
// (and why, when not known) when it ended, was deleted, or its state
// could not be read within kubeReattachWithin.
func (c *kubeContainerOps) reattach(ctx context.Context, lost error) (remotecommand.Executor, error) {
	deadline := time.Now().Add(kubeReattachWithin)
	delay := kubeSettle
	for {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, nil
		}
		p, err := c.a.cs.CoreV1().Pods(c.a.ns).Get(ctx, c.name, metav1.GetOptions{})
		switch {
		case err == nil:
			if running, _ := kubeRunning(p); !running || p.DeletionTimestamp != nil || c.replaced(p) {
				return nil, nil // it ended: the watcher says how
			}
			c.a.log.Warn("the attachment to a sandbox pod was lost; attaching again", "pod", c.name, "err", lost)
			return c.attachExecutor()
		case apierrors.IsNotFound(err) || ctx.Err() != nil:
			return nil, nil
		case time.Now().After(deadline):
			return nil, fmt.Errorf("attaching to pod %s again: its stream failed (%v) and its state could not be read within %v: %w",
				c.name, lost, kubeReattachWithin, err)
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// kubeMissedLogBytes bounds the pod's log read for the diagnostics the
// runtime wrote while no stream was attached.
const kubeMissedLogBytes = 4 << 20

// missedStderr hands on to stderr the runtime's diagnostics that the pod's
// log holds from about the time since, when its stream was lost: what it
// wrote while none was attached. The log merges the container's streams;
// the runtime's own lines are those that begin "mcp-runtime: " (the
// code's output travels in frames).
func (c *kubeContainerOps) missedStderr(ctx context.Context, since time.Time, stderr io.Writer) {
	t := metav1.NewTime(since.Add(-time.Second))
	limit := int64(kubeMissedLogBytes)
	rc, err := c.a.cs.CoreV1().Pods(c.a.ns).GetLogs(c.name, &corev1.PodLogOptions{
		Container: kubeContainer, SinceTime: &t, LimitBytes: &limit}).Stream(ctx)
	if err != nil {
		c.a.log.Debug("reading the pod's log for what its runtime wrote while detached", "pod", c.name, "err", err)
		return
	}
	defer rc.Close()
	runtimeLines(rc, stderr)
}

// runtimeLines copies to w the lines of r that the runtime wrote to its
// diagnostics (see missedStderr); lines over 64 KiB are skipped.
func runtimeLines(r io.Reader, w io.Writer) {
	br := bufio.NewReaderSize(r, 64<<10)
	long := false // within a line over the buffer
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = true
			continue
		}
		if !long && bytes.HasPrefix(line, []byte("mcp-runtime: ")) {
			w.Write(append(bytes.TrimSuffix(line, []byte("\n")), '\n'))
		}
		long = false
		if err != nil {
			return
		}
	}
}

// attachExecutor returns an executor of the pod's pods/attach.
func (c *kubeContainerOps) attachExecutor() (remotecommand.Executor, error) {
	req := c.a.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(c.a.ns).Name(c.name).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: kubeContainer, Stdin: true, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	return c.a.executor(req.URL().String())
}

// Start implements lifecycle.Ops: the pod started when it was created.
func (c *kubeContainerOps) Start(context.Context) error { return nil }

// Wait implements lifecycle.Ops: it watches the pod until its container
// has ended, or the pod was deleted or evicted.
func (c *kubeContainerOps) Wait(ctx context.Context) (engine.ExitStatus, error) {
	st, gone, err := c.waitPod(ctx)
	if gone {
		// Deleted (or evicted): its container is killed a moment later,
		// maybe seconds. Its stream ends now, so that no call runs in a
		// sandbox whose state is about to go, and the next starts anew.
		c.Detach()
	}
	return st, err
}

// waitPod is wait; gone says the pod was deleted or is being deleted.
func (c *kubeContainerOps) waitPod(ctx context.Context) (st engine.ExitStatus, gone bool, err error) {
	err = c.a.watchPod(ctx, c.name, func(p *corev1.Pod) (bool, error) {
		if c.replaced(p) {
			st, gone = engine.ExitStatus{Code: 137, EngineError: errPodReplaced.Error()}, true
			return true, nil
		}
		s, ended := kubeExit(p)
		if ended {
			st, gone = s, p.DeletionTimestamp != nil
		}
		return ended, nil
	})
	switch {
	case errors.Is(err, errPodDeleted):
		return engine.ExitStatus{Code: 137, EngineError: "the pod was deleted"}, true, nil
	case err != nil:
		return engine.ExitStatus{}, false, err
	}
	return st, gone, nil
}

// kubeDisrupted says why Kubernetes is ending p, from its DisruptionTarget
// condition (an eviction through the API, preemption, a node's
// shutdown, …), or "" when it has none: a plain deletion.
func kubeDisrupted(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue {
			continue
		}
		why := "the pod was evicted"
		if c.Reason != "EvictionByEvictionAPI" {
			why = "the pod was disrupted"
		}
		if c.Reason != "" {
			why += " (" + c.Reason + ")"
		}
		if c.Message != "" {
			why += ": " + c.Message
		}
		return why
	}
	return ""
}

// transient reports whether err is the API server being unreachable or
// restarting, which a pod outlives; a restarted API server refuses the
// bridge's requests (Forbidden) for a moment, until its authorizer has
// read the RBAC objects again (seen here), so that counts too, within
// the same bound.
func (a *kubeAPI) transient(err error) bool {
	return a.ConnFailed(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) ||
		apierrors.IsForbidden(err)
}

// kubeExit returns how p's container ended, if it did: its exit code,
// whether it was OOM-killed, an eviction or deletion in EngineError.
func kubeExit(p *corev1.Pod) (engine.ExitStatus, bool) {
	if p.DeletionTimestamp != nil {
		if why := kubeDisrupted(p); why != "" {
			return engine.ExitStatus{Code: 137, EngineError: why}, true
		}
		return engine.ExitStatus{Code: 137, EngineError: "the pod is being deleted"}, true
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != kubeContainer || cs.State.Terminated == nil {
			continue
		}
		t := cs.State.Terminated
		st := engine.ExitStatus{Code: int(t.ExitCode), OOMKilled: t.Reason == "OOMKilled"}
		if t.Reason != "" && t.Reason != "Completed" && t.Reason != "Error" && !st.OOMKilled {
			st.EngineError = t.Reason + ": " + t.Message
		}
		if p.Status.Reason == "Evicted" {
			st.EngineError = "the pod was evicted: " + p.Status.Message
		}
		return st, true
	}
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return engine.ExitStatus{Code: 137, EngineError: kubeEnded(p)}, true
	}
	return engine.ExitStatus{}, false
}

// Detach implements lifecycle.Ops.
func (c *kubeContainerOps) Detach() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
}

// Signal implements lifecycle.Ops: the API has no way to signal a
// container's process.
func (c *kubeContainerOps) Signal(context.Context, syscall.Signal) error {
	return errors.New("kubernetes cannot signal a pod's process")
}
