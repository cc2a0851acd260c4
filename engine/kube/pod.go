package kube

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// Requests of a sandbox pod: small, so that the scheduler packs many idle
// sessions on a node (20 on two cores); the limits are the spec's.
const (
	kubeCPURequest    = "10m"
	kubeMemoryRequest = 32 << 20
	// kubeEphemeral bounds what the pod writes to the node's disk: its
	// container log (the kubelet rotates it at 10 MiB × 5 by default)
	// and nothing else (the root is read-only, every writable mount is
	// memory): above the rotation, so a flood of output rotates, and
	// never evicts the pod.
	kubeEphemeral = 256 << 20
	// kubeContainer is the name of the sandbox's container in its pod.
	kubeContainer = "sandbox"
	// kubeInputContainer is the name of the init container that fills
	// InDir from Spec.Input.
	kubeInputContainer = "input"
	// kubeRlimitsEnv names the variable that tells the runtime the
	// rlimits to lower its own to, such as "nofile=1024,nproc=128":
	// Kubernetes sets none.
	kubeRlimitsEnv = "MCP_SANDBOX_RLIMITS"
)

// A kubePodOptions is what a sandbox pod takes from the backend's
// settings rather than the spec.
type kubePodOptions struct {
	// Namespace is the pod's namespace.
	Namespace string
	// RuntimeClass names a RuntimeClass (such as "gvisor"); "" for the
	// node's default runtime.
	RuntimeClass string
}

// kubePod is the one place where a sandbox's pod is decided. It is pure:
// the same spec, owner, name and options give the same pod.
//
// Its hardening is the other backends': the spec's unprivileged user
// (runAsNonRoot), a read-only root filesystem, no privilege escalation,
// every capability dropped, the runtime's default seccomp profile, no
// service-account token, no service links, no host namespaces, memory
// and CPU limits, memory-backed emptyDir volumes with size limits for
// /tmp, the workspace and the directories of files in and out. What
// Kubernetes cannot say: a per-container pids limit (the kubelet's
// podPidsLimit is node-wide), rlimits (the runtime lowers its own to
// those kubeRlimitsEnv names), and noexec/nosuid/nodev on an emptyDir
// (SECURITY.md). The pod has no restart (a sandbox's state dies with its
// process) and no owner references; its standard input stays open across
// attachments.
//
// With Spec.Input and InBytes, an init container of the same image and
// hardening, which alone mounts InDir writable, extracts the tar the
// bridge streams to its standard input (lifecycle.TarIn, run with python3 -I
// -S: directories and regular files only, no links, relative names, as
// much as the mount holds); the sandbox's container mounts InDir
// read-only and starts once it exited 0.
func kubePod(spec engine.Spec, o lifecycle.Owner, name string, opts kubePodOptions) *corev1.Pod {
	spec = spec.WithDefaults()
	uid, gid := kubeIDs(spec.User)
	yes, no := true, false
	var zero int64
	memoryDir := func(name string, size int64) corev1.Volume {
		q := resource.NewQuantity(size, resource.BinarySI)
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: q}}}
	}
	volumes := []corev1.Volume{
		memoryDir("tmp", spec.TmpBytes),
		memoryDir("workspace", spec.WorkspaceBytes),
		memoryDir("out", spec.OutBytes),
	}
	// Nested in the workspace: the kubelet mounts them after it.
	mounts := []corev1.VolumeMount{
		{Name: "tmp", MountPath: "/tmp"},
		{Name: "workspace", MountPath: lifecycle.WorkspaceDir},
		{Name: "out", MountPath: engine.OutDir},
	}
	var inits []corev1.Container
	if spec.InBytes > 0 {
		volumes = append(volumes, memoryDir("in", spec.InBytes))
		mounts = append(mounts, corev1.VolumeMount{Name: "in", MountPath: engine.InDir, ReadOnly: true})
	}
	if spec.SiteBytes > 0 {
		volumes = append(volumes, memoryDir("site", spec.SiteBytes))
		mounts = append(mounts, corev1.VolumeMount{Name: "site", MountPath: engine.SiteDir})
	}
	limits := corev1.ResourceList{
		corev1.ResourceMemory:           *resource.NewQuantity(spec.MemoryBytes, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(kubeEphemeral, resource.BinarySI),
	}
	if spec.NanoCPUs > 0 {
		limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(spec.NanoCPUs/1_000_000, resource.DecimalSI)
	}
	requests := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(kubeCPURequest),
		corev1.ResourceMemory: *resource.NewQuantity(min(kubeMemoryRequest, spec.MemoryBytes), resource.BinarySI),
	}
	if c, ok := limits[corev1.ResourceCPU]; ok && c.Cmp(requests[corev1.ResourceCPU]) < 0 {
		requests[corev1.ResourceCPU] = c
	}
	pull := corev1.PullIfNotPresent
	if strings.HasPrefix(spec.Image, "localhost/") {
		pull = corev1.PullNever // built on the node, never in a registry
	}
	var env []corev1.EnvVar
	for _, kv := range lifecycle.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	env = append(env, corev1.EnvVar{Name: kubeRlimitsEnv, Value: kubeRlimits(spec, opts)})
	seccomp := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	hardened := func() *corev1.SecurityContext {
		return &corev1.SecurityContext{
			RunAsUser:                &uid,
			RunAsGroup:               &gid,
			RunAsNonRoot:             &yes,
			ReadOnlyRootFilesystem:   &yes,
			AllowPrivilegeEscalation: &no,
			Privileged:               &no,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           seccomp,
		}
	}
	if spec.InBytes > 0 && spec.Input != nil {
		inits = append(inits, corev1.Container{
			Name:            kubeInputContainer,
			Image:           spec.Image,
			ImagePullPolicy: pull,
			Command:         []string{"python3", "-I", "-S", "-c", lifecycle.TarIn, engine.InDir},
			WorkingDir:      engine.InDir,
			Stdin:           true,
			StdinOnce:       true,
			TTY:             false,
			VolumeMounts:    []corev1.VolumeMount{{Name: "in", MountPath: engine.InDir}},
			Resources:       corev1.ResourceRequirements{Limits: limits.DeepCopy(), Requests: requests.DeepCopy()},
			SecurityContext: hardened(),
			// The extractor's error, as the start's.
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		})
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: opts.Namespace,
			Labels:    kubeLabels(lifecycle.Labels(spec, o)),
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			TerminationGracePeriodSeconds: &zero, // PID 1 ignores SIGTERM
			// The node's resolver configuration, not the cluster's DNS:
			// the sandbox has no network to ask either.
			DNSPolicy: corev1.DNSDefault,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser:      &uid,
				RunAsGroup:     &gid,
				RunAsNonRoot:   &yes,
				FSGroup:        &gid,
				SeccompProfile: seccomp,
			},
			Volumes:        volumes,
			InitContainers: inits,
			Containers: []corev1.Container{{
				Name:                     kubeContainer,
				Image:                    spec.Image,
				ImagePullPolicy:          pull,
				Command:                  append([]string(nil), spec.Cmd...),
				Env:                      env,
				WorkingDir:               lifecycle.WorkspaceDir,
				Stdin:                    true,
				StdinOnce:                false,
				TTY:                      false,
				VolumeMounts:             mounts,
				Resources:                corev1.ResourceRequirements{Limits: limits, Requests: requests},
				SecurityContext:          hardened(),
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
		},
	}
	if opts.RuntimeClass != "" {
		rc := opts.RuntimeClass
		pod.Spec.RuntimeClassName = &rc
	}
	return pod
}

// kubeRlimits returns the value of kubeRlimitsEnv for a pod of spec (with
// its defaults): RLIMIT_NOFILE always; RLIMIT_NPROC under gVisor only,
// where the Sentry counts the sandbox's own processes and threads and the
// kubelet's podPidsLimit, counting the Sentry's host tasks, does not
// contain a fork bomb. Under runc, RLIMIT_NPROC would count every process
// of the sandbox's uid on the node, across pods: the pids cgroup of the
// pod (podPidsLimit) bounds it there.
func kubeRlimits(spec engine.Spec, opts kubePodOptions) string {
	v := "nofile=" + strconv.FormatUint(spec.NoFile, 10)
	if engine.IsGVisor(opts.RuntimeClass) || engine.IsGVisor(spec.OCIRuntime) {
		spec.OCIRuntime = "runsc"
		_, nproc := spec.TaskLimits()
		v += ",nproc=" + strconv.FormatUint(nproc, 10)
	}
	return v
}

// kubeIDs returns the uid and gid of a spec's "uid[:gid]" user; a user
// that is not numeric (Kubernetes takes numbers only) is nobody.
func kubeIDs(user string) (int64, int64) {
	u, g, found := strings.Cut(user, ":")
	uid, err := strconv.ParseInt(u, 10, 64)
	if err != nil || uid < 0 {
		uid = 65534
	}
	gid := uid
	if found {
		if n, err := strconv.ParseInt(g, 10, 64); err == nil && n >= 0 {
			gid = n
		}
	}
	return uid, gid
}

// kubeLabels returns labels with every value made a valid Kubernetes label
// value (at most 63 characters of [A-Za-z0-9-_.], beginning and ending
// with an alphanumeric): a value that is not is replaced by a digest of it
// (the same value always gives the same label).
func kubeLabels(labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[k] = kubeLabelValue(v)
	}
	return out
}

// kubeLabelValue returns v when it is a valid label value, else "h-"
// and the first 16 hex digits of its SHA-256.
func kubeLabelValue(v string) string {
	valid := len(v) <= 63
	for i := 0; valid && i < len(v); i++ {
		c := v[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && c != '-' && c != '_' && c != '.' || (i == 0 || i == len(v)-1) && !alnum {
			valid = false
		}
	}
	if valid {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "h-" + hex.EncodeToString(sum[:8])
}

// kubePodName returns a new pod name for a sandbox of session: a DNS
// label (lower case, digits and '-', at most 63 characters), unique by a
// random suffix.
func kubePodName(session string) string {
	var b [4]byte
	rand.Read(b[:])
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, session)
	clean = strings.Trim(clean, "-")
	if len(clean) > 40 {
		clean = strings.TrimRight(clean[:40], "-")
	}
	name := "mcp-sbx-"
	if clean != "" {
		name += clean + "-"
	}
	return name + hex.EncodeToString(b[:])
}
