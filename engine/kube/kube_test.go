package kube

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// fakeKube returns a kubeAPI over a fake clientset holding objs.
func fakeKube(objs ...corev1.Pod) (*kubeAPI, *fake.Clientset) {
	cs := fake.NewClientset()
	for i := range objs {
		cs.Tracker().Add(&objs[i])
	}
	return &kubeAPI{cs: cs, ns: "sbx", pod: kubePodOptions{Namespace: "sbx"}, log: lifecycle.LoggerOrDiscard(nil)}, cs
}

// setStatus replaces the status of pod name in cs.
func setStatus(t *testing.T, cs *fake.Clientset, name string, st corev1.PodStatus) {
	t.Helper()
	p, err := cs.CoreV1().Pods("sbx").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = st
	if _, err := cs.CoreV1().Pods("sbx").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waiting(reason string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: kubeContainer, Image: "localhost/x:1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "because"}}}}}
}

func TestKubeCreateVerifyList(t *testing.T) {
	a, cs := fakeKube()
	ctx := context.Background()
	spec := engine.Spec{Cmd: []string{"python3"}, Session: "session-1"}
	o := lifecycle.Owner{Host: "h", PID: 7, Start: "1"}
	id, err := a.Create(ctx, spec, o, "")
	if err != nil || !strings.HasPrefix(id, "mcp-sbx-session-1-") {
		t.Fatalf("create: %q %v", id, err)
	}
	if err := a.Verify(ctx, id, spec); err != nil {
		t.Fatalf("verify of the pod as built: %v", err)
	}
	// An admission controller that weakened it: refused, saying what.
	p, _ := cs.CoreV1().Pods("sbx").Get(ctx, id, metav1.GetOptions{})
	yes := true
	p.Spec.Containers[0].SecurityContext.Privileged = &yes
	cs.CoreV1().Pods("sbx").Update(ctx, p, metav1.UpdateOptions{})
	if err := a.Verify(ctx, id, spec); err == nil || !strings.Contains(err.Error(), "privileged") {
		t.Fatalf("verify of a privileged pod: %v", err)
	}
	list, err := a.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].State != "created" || list[0].Labels[engine.LabelPID] != "7" {
		t.Fatalf("List: %+v %v", list, err)
	}
	if err := a.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := a.Remove(ctx, id); err != nil {
		t.Fatalf("removing a pod already gone: %v", err)
	}
}

func TestKubeHardeningChecks(t *testing.T) {
	spec := engine.Spec{Cmd: []string{"x"}}
	for _, tc := range []struct {
		name  string
		alter func(p *corev1.Pod)
		want  string
	}{
		{"host network", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, "host namespace"},
		{"token", func(p *corev1.Pod) { y := true; p.Spec.AutomountServiceAccountToken = &y }, "service-account token"},
		{"restart", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyAlways }, "restart policy"},
		{"sidecar", func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "x"}} }, "other containers"},
		{"hostPath", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}, "not an emptyDir"},
		{"writable root", func(p *corev1.Pod) { n := false; p.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = &n }, "writable"},
		{"escalation", func(p *corev1.Pod) { y := true; p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &y }, "escalate"},
		{"root", func(p *corev1.Pod) { var z int64; p.Spec.Containers[0].SecurityContext.RunAsUser = &z }, "sandbox user"},
		{"capability", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_RAW"}
		}, "capabilities"},
		{"memory", func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = nil }, "memory limit"},
	} {
		p := kubePod(spec, lifecycle.Owner{}, "p", kubePodOptions{})
		tc.alter(p)
		if err := kubeCheckHardened(p, spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	if err := kubeCheckHardened(kubePod(spec, lifecycle.Owner{}, "p", kubePodOptions{RuntimeClass: "gvisor"}), spec); err != nil {
		t.Errorf("the pod as built: %v", err)
	}
}

func TestKubeRunningReportsAtOnce(t *testing.T) {
	spec := engine.Spec{Cmd: []string{"x"}}
	pod := *kubePod(spec, lifecycle.Owner{}, "p1", kubePodOptions{Namespace: "sbx"})
	a, cs := fakeKube(pod)
	c := &kubeContainerOps{a: a, name: "p1"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.running(ctx) }()
	time.Sleep(50 * time.Millisecond)
	setStatus(t, cs, "p1", waiting("ContainerCreating"))
	time.Sleep(50 * time.Millisecond)
	setStatus(t, cs, "p1", waiting("ErrImageNeverPull"))
	select {
	case err := <-done:
		if !errors.Is(err, engine.ErrImage) || !strings.Contains(err.Error(), "ErrImageNeverPull") {
			t.Fatalf("a missing image: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("a missing image was not reported")
	}
	setStatus(t, cs, "p1", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: kubeContainer,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}})
	if err := c.running(ctx); err != nil {
		t.Fatalf("a running pod: %v", err)
	}
}

func TestKubeWait(t *testing.T) {
	pod := *kubePod(engine.Spec{Cmd: []string{"x"}}, lifecycle.Owner{}, "p2", kubePodOptions{Namespace: "sbx"})
	a, cs := fakeKube(pod)
	c := &kubeContainerOps{a: a, name: "p2"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan engine.ExitStatus, 1)
	go func() { st, _ := c.Wait(ctx); got <- st }()
	time.Sleep(50 * time.Millisecond)
	setStatus(t, cs, "p2", corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: kubeContainer,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}})
	select {
	case st := <-got:
		if st.Code != 137 || !st.OOMKilled {
			t.Fatalf("an OOM-killed pod: %+v", st)
		}
	case <-ctx.Done():
		t.Fatal("wait did not see the pod end")
	}
	// A pod deleted under its session.
	a2, cs2 := fakeKube(*kubePod(engine.Spec{Cmd: []string{"x"}}, lifecycle.Owner{}, "p3", kubePodOptions{Namespace: "sbx"}))
	c2 := &kubeContainerOps{a: a2, name: "p3"}
	go func() { st, _ := c2.Wait(ctx); got <- st }()
	time.Sleep(50 * time.Millisecond)
	cs2.CoreV1().Pods("sbx").Delete(ctx, "p3", metav1.DeleteOptions{})
	select {
	case st := <-got:
		if !strings.Contains(st.EngineError, "deleted") {
			t.Fatalf("a deleted pod: %+v", st)
		}
	case <-ctx.Done():
		t.Fatal("wait did not see the pod deleted")
	}
}

func TestKubeDenyNetwork(t *testing.T) {
	a, cs := fakeKube()
	ctx := context.Background()
	a.denyNetwork(ctx)
	a.denyNetwork(ctx) // there already: nothing changes
	pol, err := cs.NetworkingV1().NetworkPolicies("sbx").Get(ctx, kubeDenyPolicy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pol.Spec.PodSelector.MatchLabels[engine.LabelBridge] != "1" || len(pol.Spec.Ingress) != 0 || len(pol.Spec.Egress) != 0 || len(pol.Spec.PolicyTypes) != 2 {
		t.Fatalf("the deny-all policy: %+v", pol.Spec)
	}
}

// TestRuntimeLines: of a pod's log, where the container's streams are
// merged, only the runtime's own diagnostics are handed on; a line over
// the buffer is skipped whole, and a last line without its newline kept.
func TestRuntimeLines(t *testing.T) {
	log := `{"t":"out","id":"1","stream":"stdout","data":"mcp-runtime: not one"}` + "\n" +
		"mcp-runtime: host main is gone\n" +
		"mcp-runtime: " + strings.Repeat("x", 70<<10) + "\n" +
		"\x00\x01binary payload\n" +
		"mcp-runtime: the last one"
	var got bytes.Buffer
	runtimeLines(strings.NewReader(log), &got)
	if want := "mcp-runtime: host main is gone\nmcp-runtime: the last one\n"; got.String() != want {
		t.Fatalf("handed on %q, want %q", got.String(), want)
	}
}

// TestKubeExit: how a pod that ended, or is being ended, is reported.
func TestKubeExit(t *testing.T) {
	now := metav1.Now()
	term := func(code int32, reason string) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: kubeContainer, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}}
	}
	disruption := func(reason, msg string) []corev1.PodCondition {
		return []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason, Message: msg}}
	}
	for _, tt := range []struct {
		name  string
		pod   corev1.Pod
		ended bool
		want  engine.ExitStatus
	}{
		{"running", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false, engine.ExitStatus{}},
		{"exited", corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: term(3, "Error")}}, true, engine.ExitStatus{Code: 3}},
		{"OOM-killed", corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: term(137, "OOMKilled")}}, true, engine.ExitStatus{Code: 137, OOMKilled: true}},
		{"deleted", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}, true,
			engine.ExitStatus{Code: 137, EngineError: "the pod is being deleted"}},
		{"evicted through the API", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now},
			Status: corev1.PodStatus{Conditions: disruption("EvictionByEvictionAPI", "Eviction API: evicting")}}, true,
			engine.ExitStatus{Code: 137, EngineError: "the pod was evicted (EvictionByEvictionAPI): Eviction API: evicting"}},
		{"preempted", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now},
			Status: corev1.PodStatus{Conditions: disruption("PreemptionByScheduler", "")}}, true,
			engine.ExitStatus{Code: 137, EngineError: "the pod was disrupted (PreemptionByScheduler)"}},
		{"evicted by the kubelet", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory",
			ContainerStatuses: term(137, "ContainerStatusUnknown")}}, true,
			engine.ExitStatus{Code: 137, EngineError: "the pod was evicted: low on memory"}},
	} {
		st, ended := kubeExit(&tt.pod)
		if ended != tt.ended || st != tt.want {
			t.Errorf("%s: %+v %v, want %+v %v", tt.name, st, ended, tt.want, tt.ended)
		}
	}
}
