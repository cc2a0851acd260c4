package kube

import (
	"io"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// TestKubePod checks every field of a sandbox pod that its hardening
// rests on, for the default spec and for a spec that sets everything.
func TestKubePod(t *testing.T) {
	o := lifecycle.Owner{Host: "host-1", PID: 42, Start: "777"}
	full := engine.Spec{Image: "localhost/sandbox-python:3.11", Cmd: []string{"python3", "-c", "x"}, User: "1000:2000",
		MemoryBytes: 256 << 20, PidsLimit: 64, NanoCPUs: 1_500_000_000, TmpBytes: 1 << 20, WorkspaceBytes: 2 << 20,
		OutBytes: 3 << 20, InBytes: 4 << 20, SiteBytes: 5 << 20, Session: "Session_1", Resumable: "ab12",
		NoFile: 512, Input: func(io.Writer) error { return nil }}
	def := kubePod(engine.Spec{Cmd: []string{"python3"}}, o, "mcp-sbx-a", kubePodOptions{Namespace: "ns"})
	got := kubePod(full, o, "mcp-sbx-b", kubePodOptions{Namespace: "sandboxes", RuntimeClass: "gvisor"})
	c, dc := got.Spec.Containers[0], def.Spec.Containers[0]
	var ic corev1.Container // the input container
	if len(got.Spec.InitContainers) == 1 {
		ic = got.Spec.InitContainers[0]
	}
	// InBytes without Input: InDir is mounted, empty, with no container to fill it.
	noInput := kubePod(engine.Spec{Cmd: []string{"x"}, InBytes: 1 << 20}, o, "p", kubePodOptions{})
	env := func(c corev1.Container, name string) string {
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value
			}
		}
		return "<unset>"
	}
	q := func(l corev1.ResourceList, n corev1.ResourceName) string { v := l[n]; return v.String() }
	mounts := func(ms []corev1.VolumeMount) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.MountPath+map[bool]string{true: ":ro", false: ""}[m.ReadOnly])
		}
		return strings.Join(s, " ")
	}
	sizes := func(vs []corev1.Volume) string {
		var s []string
		for _, v := range vs {
			if v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory {
				return "not all memory emptyDirs"
			}
			s = append(s, v.Name+"="+v.EmptyDir.SizeLimit.String())
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		field string
		got   any
		want  any
	}{
		{"name", got.Name, "mcp-sbx-b"},
		{"namespace", got.Namespace, "sandboxes"},
		{"labels", got.Labels, map[string]string{engine.LabelBridge: "1", engine.LabelHost: "host-1", engine.LabelPID: "42", engine.LabelPIDStart: "777", engine.LabelSession: "Session_1", engine.LabelResumable: "ab12"}},
		{"owner references", len(got.OwnerReferences), 0},
		{"restart", got.Spec.RestartPolicy, corev1.RestartPolicyNever},
		{"service-account token", *got.Spec.AutomountServiceAccountToken, false},
		{"service links", *got.Spec.EnableServiceLinks, false},
		{"host namespaces", []bool{got.Spec.HostNetwork, got.Spec.HostPID, got.Spec.HostIPC}, []bool{false, false, false}},
		{"grace", *got.Spec.TerminationGracePeriodSeconds, int64(0)},
		{"dns", got.Spec.DNSPolicy, corev1.DNSDefault},
		{"runtime class", *got.Spec.RuntimeClassName, "gvisor"},
		{"default runtime class", def.Spec.RuntimeClassName, (*string)(nil)},
		{"pod user", []int64{*got.Spec.SecurityContext.RunAsUser, *got.Spec.SecurityContext.RunAsGroup, *got.Spec.SecurityContext.FSGroup}, []int64{1000, 2000, 2000}},
		{"default user", []int64{*dc.SecurityContext.RunAsUser, *dc.SecurityContext.RunAsGroup}, []int64{65534, 65534}},
		{"pod non-root", *got.Spec.SecurityContext.RunAsNonRoot, true},
		{"pod seccomp", got.Spec.SecurityContext.SeccompProfile.Type, corev1.SeccompProfileTypeRuntimeDefault},
		{"containers", len(got.Spec.Containers), 1},
		{"init containers", len(got.Spec.InitContainers), 1},
		{"default init containers", len(def.Spec.InitContainers), 0},
		{"no input container without Input", len(noInput.Spec.InitContainers), 0},
		{"InDir without Input", mounts(noInput.Spec.Containers[0].VolumeMounts), "/tmp /workspace /workspace/out /workspace/in:ro"},
		{"container name", c.Name, kubeContainer},
		{"image", c.Image, "localhost/sandbox-python:3.11"},
		{"pull of a localhost image", c.ImagePullPolicy, corev1.PullNever},
		{"pull of another image", dc.ImagePullPolicy, corev1.PullIfNotPresent},
		{"command", c.Command, []string{"python3", "-c", "x"}},
		{"args", len(c.Args), 0},
		{"env", len(c.Env), len(lifecycle.Env()) + 1},
		{"rlimits under gVisor", env(c, kubeRlimitsEnv), "nofile=512,nproc=64"},
		{"default rlimits", env(dc, kubeRlimitsEnv), "nofile=1024"},
		{"rlimits of an OCI runtime named runsc", env(kubePod(engine.Spec{Cmd: []string{"x"}, OCIRuntime: "runsc"}, o, "p", kubePodOptions{}).Spec.Containers[0], kubeRlimitsEnv), "nofile=1024,nproc=128"},
		{"workdir", c.WorkingDir, lifecycle.WorkspaceDir},
		{"streams", []bool{c.Stdin, c.StdinOnce, c.TTY}, []bool{true, false, false}},
		{"container user", []int64{*c.SecurityContext.RunAsUser, *c.SecurityContext.RunAsGroup}, []int64{1000, 2000}},
		{"container non-root", *c.SecurityContext.RunAsNonRoot, true},
		{"read-only root", *c.SecurityContext.ReadOnlyRootFilesystem, true},
		{"privilege escalation", *c.SecurityContext.AllowPrivilegeEscalation, false},
		{"privileged", *c.SecurityContext.Privileged, false},
		{"capabilities", c.SecurityContext.Capabilities, &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
		{"container seccomp", c.SecurityContext.SeccompProfile.Type, corev1.SeccompProfileTypeRuntimeDefault},
		{"memory limit", q(c.Resources.Limits, corev1.ResourceMemory), "256Mi"},
		{"default memory limit", q(dc.Resources.Limits, corev1.ResourceMemory), "512Mi"},
		{"cpu limit", q(c.Resources.Limits, corev1.ResourceCPU), "1500m"},
		{"no cpu limit by default", q(dc.Resources.Limits, corev1.ResourceCPU), "0"},
		{"ephemeral storage", q(c.Resources.Limits, corev1.ResourceEphemeralStorage), "256Mi"},
		{"cpu request", q(c.Resources.Requests, corev1.ResourceCPU), "10m"},
		{"memory request", q(c.Resources.Requests, corev1.ResourceMemory), "32Mi"},
		{"mounts", mounts(c.VolumeMounts), "/tmp /workspace /workspace/out /workspace/in:ro " + engine.SiteDir},
		{"default mounts", mounts(dc.VolumeMounts), "/tmp /workspace /workspace/out"},
		{"volumes", sizes(got.Spec.Volumes), "tmp=1Mi workspace=2Mi out=3Mi in=4Mi site=5Mi"},
		{"default volumes", sizes(def.Spec.Volumes), "tmp=64Mi workspace=128Mi out=64Mi"},
		// The input container: the sandbox's hardening, InDir alone
		// writable, the tar on its standard input, once.
		{"input name", ic.Name, kubeInputContainer},
		{"input image", []any{ic.Image, ic.ImagePullPolicy}, []any{"localhost/sandbox-python:3.11", corev1.PullNever}},
		{"input command", ic.Command, []string{"python3", "-I", "-S", "-c", lifecycle.TarIn, engine.InDir}},
		{"input args and env", []int{len(ic.Args), len(ic.Env), len(ic.EnvFrom)}, []int{0, 0, 0}},
		{"input streams", []bool{ic.Stdin, ic.StdinOnce, ic.TTY}, []bool{true, true, false}},
		{"input mounts", mounts(ic.VolumeMounts), "/workspace/in"},
		{"input user", []int64{*ic.SecurityContext.RunAsUser, *ic.SecurityContext.RunAsGroup}, []int64{1000, 2000}},
		{"input non-root", *ic.SecurityContext.RunAsNonRoot, true},
		{"input read-only root", *ic.SecurityContext.ReadOnlyRootFilesystem, true},
		{"input privilege escalation", *ic.SecurityContext.AllowPrivilegeEscalation, false},
		{"input privileged", *ic.SecurityContext.Privileged, false},
		{"input capabilities", ic.SecurityContext.Capabilities, &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
		{"input seccomp", ic.SecurityContext.SeccompProfile.Type, corev1.SeccompProfileTypeRuntimeDefault},
		{"input limits", []string{q(ic.Resources.Limits, corev1.ResourceMemory), q(ic.Resources.Limits, corev1.ResourceCPU), q(ic.Resources.Limits, corev1.ResourceEphemeralStorage)}, []string{"256Mi", "1500m", "256Mi"}},
		{"input requests", []string{q(ic.Resources.Requests, corev1.ResourceCPU), q(ic.Resources.Requests, corev1.ResourceMemory)}, []string{"10m", "32Mi"}},
		{"input termination message", ic.TerminationMessagePolicy, corev1.TerminationMessageFallbackToLogsOnError},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: %#v, want %#v", tc.field, tc.got, tc.want)
		}
	}
	// Pure: the same input gives the same pod.
	if again := kubePod(full, o, "mcp-sbx-b", kubePodOptions{Namespace: "sandboxes", RuntimeClass: "gvisor"}); !equality.Semantic.DeepEqual(again, got) {
		t.Error("kubePod is not pure")
	}
	// A CPU cap under the request lowers the request.
	small := kubePod(engine.Spec{Cmd: []string{"x"}, NanoCPUs: 5_000_000}, o, "p", kubePodOptions{})
	if r := small.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; r.Cmp(resource.MustParse("5m")) != 0 {
		t.Errorf("the CPU request under a 5m cap: %s", r.String())
	}
}

func TestKubeLabelValue(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"host-1", "host-1"},
		{"a.b_c-D9", "a.b_c-D9"},
		{strings.Repeat("h", 63), strings.Repeat("h", 63)},
	} {
		if got := kubeLabelValue(tc.in); got != tc.want {
			t.Errorf("kubeLabelValue(%q) = %q", tc.in, got)
		}
	}
	for _, bad := range []string{strings.Repeat("h", 64), "-lead", "trail.", "sp ace", "ü"} {
		got := kubeLabelValue(bad)
		if !strings.HasPrefix(got, "h-") || len(got) != 18 || got != kubeLabelValue(bad) {
			t.Errorf("kubeLabelValue(%q) = %q, want a stable digest", bad, got)
		}
	}
}

func TestKubePodName(t *testing.T) {
	for _, s := range []string{"session-1", "Session_1.x", "", strings.Repeat("A", 80), "--"} {
		n := kubePodName(s)
		if len(n) > 63 || !strings.HasPrefix(n, "mcp-sbx-") || strings.Trim(n, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || strings.HasSuffix(n, "-") {
			t.Errorf("kubePodName(%q) = %q: not a DNS label", s, n)
		}
	}
	if a, b := kubePodName("s"), kubePodName("s"); a == b {
		t.Error("two pod names of one session are equal")
	}
}
