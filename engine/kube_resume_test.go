package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
)

func TestKubeInspectSandbox(t *testing.T) {
	ctx := context.Background()
	pod := *kubePod(Spec{Cmd: []string{"x"}, Resumable: "k1"}, owner{Host: "h", PID: 3}, "sb", kubePodOptions{Namespace: "sbx"})
	a, cs := fakeKube(pod)
	if _, err := a.inspectSandbox(ctx, "sb"); !errors.Is(err, ErrNoSandbox) || !strings.Contains(err.Error(), "has not started") {
		t.Fatalf("a pending pod: %v", err)
	}
	setStatus(t, cs, "sb", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: kubeContainer,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}})
	st, err := a.inspectSandbox(ctx, "sb")
	if err != nil || !st.Running || st.ID != "sb" || st.Labels[LabelResumable] != "k1" || st.Labels[LabelBridge] != "1" {
		t.Fatalf("a running pod: %+v %v", st, err)
	}
	setStatus(t, cs, "sb", corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: kubeContainer,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: ExitIdle, Reason: "Completed"}}}}})
	if st, err := a.inspectSandbox(ctx, "sb"); err != nil || st.Running || st.ExitCode != ExitIdle {
		t.Fatalf("a pod ended idle: %+v %v", st, err)
	}
	if _, err := a.inspectSandbox(ctx, "nope"); !errors.Is(err, ErrNoSandbox) || !strings.Contains(err.Error(), "was removed") {
		t.Fatalf("a pod that does not exist: %v", err)
	}
	cs.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "sb", errors.New("no"))
	})
	if _, err := a.inspectSandbox(ctx, "sb"); err == nil || errors.Is(err, ErrNoSandbox) || !strings.Contains(err.Error(), "get") {
		t.Fatalf("a forbidden read: %v", err)
	}
}

func TestKubeResumeRefusesOthers(t *testing.T) {
	ctx := context.Background()
	other := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "sbx"}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{{Name: kubeContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	a, _ := fakeKube(other)
	e := newContainerEngine(BackendKubernetes, "test", a, loggerOrDiscard(nil), 0)
	if _, err := e.resume(ctx, "", "web", []string{"relay"}); !errors.Is(err, ErrNoSandbox) || !strings.Contains(err.Error(), "not a sandbox") {
		t.Fatalf("resuming a pod that is not a sandbox: %v", err)
	}
	if _, err := e.resume(ctx, "docker", "web", []string{"relay"}); !errors.Is(err, ErrOtherEngine) {
		t.Fatalf("resuming on another engine: %v", err)
	}
}

func TestKubePodAlive(t *testing.T) {
	ctx := context.Background()
	bridge := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bridge-0", Namespace: "mcp-bridge", UID: types.UID("uid-now")}}
	a, cs := fakeKube(bridge)
	tests := []struct {
		p    PodRef
		want bool
	}{
		{PodRef{"mcp-bridge", "bridge-0", "uid-now"}, true},
		{PodRef{"mcp-bridge", "bridge-0", "uid-before"}, false}, // made again since
		{PodRef{"mcp-bridge", "bridge-1", "uid-1"}, false},      // deleted
		{PodRef{"other", "bridge-0", "uid-now"}, false},
	}
	for _, tt := range tests {
		if got := a.podAlive(ctx, tt.p); got != tt.want {
			t.Errorf("podAlive(%v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	// An owner that cannot be looked up is left alone.
	cs.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "bridge-1", errors.New("no"))
	})
	if !a.podAlive(ctx, PodRef{"mcp-bridge", "bridge-1", "uid-1"}) {
		t.Error("a pod that could not be read was reported gone")
	}
	// One pass looks each owner up once.
	n := 0
	gone := podsGone(ctx, func(context.Context, PodRef) bool { n++; return false })
	for range 3 {
		if !gone(PodRef{"a", "b", "c"}) {
			t.Fatal("a pod not alive is not gone")
		}
	}
	if n != 1 {
		t.Fatalf("looked up %d times in one pass, want 1", n)
	}
}

func TestKubeOrphansOfPods(t *testing.T) {
	ctx := context.Background()
	mine := PodRef{"mcp-bridge", "bridge-0", "uid-0"}
	peer := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bridge-1", Namespace: "mcp-bridge", UID: "uid-1"}}
	me := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bridge-0", Namespace: "mcp-bridge", UID: "uid-0"}}
	sandbox := func(name string, p PodRef) corev1.Pod {
		return *kubePod(Spec{Cmd: []string{"x"}}, owner{Host: "node", PID: 1, Pod: p}, name, kubePodOptions{Namespace: "sbx"})
	}
	a, cs := fakeKube(me, peer,
		sandbox("of-me", mine), sandbox("of-peer", PodRef{"mcp-bridge", "bridge-1", "uid-1"}),
		sandbox("of-gone", PodRef{"mcp-bridge", "bridge-2", "uid-2"}), sandbox("of-process", PodRef{}))
	e := newContainerEngine(BackendKubernetes, "test", a, loggerOrDiscard(nil), 0)
	e.owner = owner{Host: "node", PID: 1, Pod: mine}
	e.podAlive = a.podAlive
	e.removeOrphans(ctx)
	left, err := cs.CoreV1().Pods("sbx").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range left.Items {
		names = append(names, p.Name)
	}
	if strings.Join(names, " ") != "of-me of-peer of-process" {
		t.Fatalf("pods left after the clean-up: %q, want those of live owners and of a process", names)
	}
}
