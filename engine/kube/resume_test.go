package kube

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

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

func TestKubeInspectSandbox(t *testing.T) {
	ctx := context.Background()
	pod := *kubePod(engine.Spec{Cmd: []string{"x"}, Resumable: "k1"}, lifecycle.Owner{Host: "h", PID: 3}, "sb", kubePodOptions{Namespace: "sbx"})
	a, cs := fakeKube(pod)
	if _, err := a.InspectSandbox(ctx, "sb"); !errors.Is(err, engine.ErrNoSandbox) || !strings.Contains(err.Error(), "has not started") {
		t.Fatalf("a pending pod: %v", err)
	}
	setStatus(t, cs, "sb", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: kubeContainer,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}})
	st, err := a.InspectSandbox(ctx, "sb")
	if err != nil || !st.Running || st.ID != "sb" || st.Labels[engine.LabelResumable] != "k1" || st.Labels[engine.LabelBridge] != "1" {
		t.Fatalf("a running pod: %+v %v", st, err)
	}
	setStatus(t, cs, "sb", corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: kubeContainer,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: engine.ExitIdle, Reason: "Completed"}}}}})
	if st, err := a.InspectSandbox(ctx, "sb"); err != nil || st.Running || st.ExitCode != engine.ExitIdle {
		t.Fatalf("a pod ended idle: %+v %v", st, err)
	}
	if _, err := a.InspectSandbox(ctx, "nope"); !errors.Is(err, engine.ErrNoSandbox) || !strings.Contains(err.Error(), "was removed") {
		t.Fatalf("a pod that does not exist: %v", err)
	}
	cs.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "sb", errors.New("no"))
	})
	if _, err := a.InspectSandbox(ctx, "sb"); err == nil || errors.Is(err, engine.ErrNoSandbox) || !strings.Contains(err.Error(), "get") {
		t.Fatalf("a forbidden read: %v", err)
	}
}

func TestKubeResumeRefusesOthers(t *testing.T) {
	ctx := context.Background()
	other := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "sbx"}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{{Name: kubeContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	a, _ := fakeKube(other)
	e := lifecycle.NewEngine(engine.BackendKubernetes, "test", a, lifecycle.LoggerOrDiscard(nil), 0)
	if _, err := e.Resume(ctx, "", "web", []string{"relay"}); !errors.Is(err, engine.ErrNoSandbox) || !strings.Contains(err.Error(), "not a sandbox") {
		t.Fatalf("resuming a pod that is not a sandbox: %v", err)
	}
	if _, err := e.Resume(ctx, "docker", "web", []string{"relay"}); !errors.Is(err, engine.ErrOtherEngine) {
		t.Fatalf("resuming on another engine: %v", err)
	}
}

func TestKubePodAlive(t *testing.T) {
	ctx := context.Background()
	bridge := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bridge-0", Namespace: "mcp-bridge", UID: types.UID("uid-now")}}
	a, cs := fakeKube(bridge)
	tests := []struct {
		p    engine.PodRef
		want bool
	}{
		{engine.PodRef{Namespace: "mcp-bridge", Name: "bridge-0", UID: "uid-now"}, true},
		{engine.PodRef{Namespace: "mcp-bridge", Name: "bridge-0", UID: "uid-before"}, false}, // made again since
		{engine.PodRef{Namespace: "mcp-bridge", Name: "bridge-1", UID: "uid-1"}, false},      // deleted
		{engine.PodRef{Namespace: "other", Name: "bridge-0", UID: "uid-now"}, false},
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
	if !a.podAlive(ctx, engine.PodRef{Namespace: "mcp-bridge", Name: "bridge-1", UID: "uid-1"}) {
		t.Error("a pod that could not be read was reported gone")
	}
}

func TestKubeOrphansOfPods(t *testing.T) {
	ctx := context.Background()
	mine := engine.PodRef{Namespace: "mcp-bridge", Name: "bridge-0", UID: "uid-0"}
	peer := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bridge-1", Namespace: "mcp-bridge", UID: "uid-1"}}
	me := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bridge-0", Namespace: "mcp-bridge", UID: "uid-0"}}
	sandbox := func(name string, p engine.PodRef) corev1.Pod {
		return *kubePod(engine.Spec{Cmd: []string{"x"}}, lifecycle.Owner{Host: "node", PID: 1, Pod: p}, name, kubePodOptions{Namespace: "sbx"})
	}
	a, cs := fakeKube(me, peer,
		sandbox("of-me", mine), sandbox("of-peer", engine.PodRef{Namespace: "mcp-bridge", Name: "bridge-1", UID: "uid-1"}),
		sandbox("of-gone", engine.PodRef{Namespace: "mcp-bridge", Name: "bridge-2", UID: "uid-2"}), sandbox("of-process", engine.PodRef{}))
	e := lifecycle.NewEngine(engine.BackendKubernetes, "test", a, lifecycle.LoggerOrDiscard(nil), 0)
	e.Owner = lifecycle.Owner{Host: "node", PID: 1, Pod: mine}
	e.PodAlive = a.podAlive
	e.RemoveOrphans(ctx)
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
