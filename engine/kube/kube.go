// Package kube is the Kubernetes backend of package engine: sandboxes as
// pods of one namespace, reached only through the API server
// (k8s.io/client-go). Each pod is hardened by kubePod, one pure function,
// and checked against it once the API server admitted it.
package kube

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// A Kubernetes is an Engine whose sandboxes are pods of one namespace,
// reached only through the API server: pods are created, attached
// (pods/attach), exec'd into (pods/exec) and deleted; their addresses are
// never dialled.
type Kubernetes struct {
	e    *lifecycle.Engine
	api  *kubeAPI
	name string // "kubernetes" or "kubernetes@CONTEXT", for messages
}

// kubeQuiet routes client-go's klog to the first Kubernetes engine's
// logger, once (klog is process-wide).
var kubeQuiet sync.Once

// A debugHandler logs every record at the Debug level: client-go's own
// reports (a stream that ended as its sandbox closed) are detail, and
// what matters of them reaches the caller as an error.
type debugHandler struct{ h slog.Handler }

func (d debugHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d debugHandler) Handle(ctx context.Context, r slog.Record) error {
	if !d.h.Enabled(ctx, slog.LevelDebug) {
		return nil
	}
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d debugHandler) WithAttrs(a []slog.Attr) slog.Handler { return debugHandler{d.h.WithAttrs(a)} }
func (d debugHandler) WithGroup(g string) slog.Handler      { return debugHandler{d.h.WithGroup(g)} }

// kubeConnectTimeout bounds New's check of the API server.
const kubeConnectTimeout = 10 * time.Second

// New connects to the cluster of opts and checks that the
// namespace exists and that this identity may create pods in it.
func New(ctx context.Context, opts *engine.KubernetesOptions) (*Kubernetes, error) {
	if opts == nil {
		opts = &engine.KubernetesOptions{}
	}
	log := lifecycle.LoggerOrDiscard(opts.Logger)
	kubeQuiet.Do(func() {
		// client-go reports through klog, to stderr by default: the
		// streams a closed sandbox ends are reported as errors there.
		klog.SetSlogLogger(slog.New(debugHandler{log.Handler()}).With("component", "client-go"))
	})
	cfg, where, err := kubeConfig(opts)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes at %s: %w", where, err)
	}
	ns := opts.Namespace
	if ns == "" {
		ns = engine.DefaultK8sNamespace
	}
	api := &kubeAPI{cs: cs, rest: cfg, ns: ns, pod: kubePodOptions{Namespace: ns, RuntimeClass: opts.RuntimeClass}, log: log}
	if opts.SandboxTemplate != "" {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("kubernetes at %s: %w", where, err)
		}
		api.claims = newKubeClaims(dyn, ns, opts.SandboxTemplate)
	}
	cctx, cancel := context.WithTimeout(ctx, kubeConnectTimeout)
	defer cancel()
	if err := api.check(cctx); err != nil {
		return nil, fmt.Errorf("kubernetes at %s: %w", where, err)
	}
	name := engine.BackendKubernetes
	if opts.Context != "" {
		name += "@" + opts.Context
	}
	log.Info("kubernetes API server", "server", cfg.Host, "namespace", ns, "runtime_class", opts.RuntimeClass)
	k := &Kubernetes{api: api, name: name}
	o := lifecycle.CurrentOwner()
	o.Host = kubeLabelValue(o.Host)
	o.Pod = opts.Owner
	api.denyNetwork(cctx)
	k.e = lifecycle.NewEngine(engine.BackendKubernetes, where, api, log, 0)
	k.e.Owner = o
	k.e.PodAlive = api.podAlive
	k.e.RemoveOrphans(ctx)
	if api.claims != nil {
		api.claims.RemoveOrphans(ctx, k.e)
	}
	return k, nil
}

// kubeConfig returns the client configuration of opts and a description
// of where it came from.
func kubeConfig(opts *engine.KubernetesOptions) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	where := "the default kubeconfig ~/.kube/config"
	switch env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); {
	case opts.Kubeconfig != "":
		rules.ExplicitPath = opts.Kubeconfig
		where = opts.Kubeconfig
	case env != "":
		where = "KUBECONFIG=" + env
		// client-go skips the files of KUBECONFIG that do not exist:
		// with none left it would report only that nothing configures
		// a cluster.
		if !slices.ContainsFunc(filepath.SplitList(env), func(f string) bool { _, err := os.Stat(f); return f != "" && err == nil }) {
			return nil, "", kubeConfigError{fmt.Errorf("kubernetes: reading %s: %w", where, fs.ErrNotExist)}
		}
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: opts.Context}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := loader.ClientConfig()
	if err != nil {
		if opts.Kubeconfig == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" && opts.Context == "" {
			if in, ierr := rest.InClusterConfig(); ierr == nil {
				return in, "the in-cluster API server", nil
			}
		}
		return nil, "", kubeConfigError{fmt.Errorf("kubernetes: reading %s: %w", where, err)}
	}
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, cfg.Host, nil
}

// A kubeConfigError is a kubeconfig that cannot be read: no engine is
// reachable (errors.Is ErrNoEngine), which its message does not repeat.
type kubeConfigError struct{ err error }

func (e kubeConfigError) Error() string   { return e.err.Error() }
func (e kubeConfigError) Unwrap() []error { return []error{engine.ErrNoEngine, e.err} }

// check reports a namespace that does not exist, or in which this
// identity may not create pods, naming the verb and resource.
func (a *kubeAPI) check(ctx context.Context) error {
	_, err := a.cs.CoreV1().Pods(a.ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return a.explain(err, "list", "pods")
	}
	// Pods are listed in a namespace that does not exist as in an empty
	// one; an identity that may read the namespace learns which.
	if _, err := a.cs.CoreV1().Namespaces().Get(ctx, a.ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return fmt.Errorf("namespace %q does not exist (create it, or set MCP_BRIDGE_K8S_NAMESPACE): %w", a.ns, err)
	}
	ssar := &authorizationSSAR{}
	for _, verb := range []string{"create", "delete"} {
		ok, why, err := ssar.can(ctx, a.cs, a.ns, verb, "pods", "")
		if err == nil && !ok {
			return fmt.Errorf("this identity may not %s pods in namespace %q (%s): grant it (scripts/provision --kubernetes makes a role)", verb, a.ns, why)
		}
	}
	for _, sub := range []string{"attach", "exec"} {
		ok, why, err := ssar.can(ctx, a.cs, a.ns, "create", "pods", sub)
		if err == nil && !ok {
			return fmt.Errorf("this identity may not create pods/%s in namespace %q (%s)", sub, a.ns, why)
		}
	}
	return nil
}

// Name returns "kubernetes", or "kubernetes@CONTEXT" for a named context.
func (k *Kubernetes) Name() string { return k.name }

// Start implements Engine.
func (k *Kubernetes) Start(ctx context.Context, spec engine.Spec) (engine.Sandbox, error) {
	return k.e.Start(ctx, spec)
}

// Close tries once more to delete the pods whose deletion failed.
func (k *Kubernetes) Close() error {
	k.e.Close()
	return nil
}

// Ping checks that the API server answers.
func (k *Kubernetes) Ping(ctx context.Context) error {
	_, err := k.api.cs.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("kubernetes: %w", err)
	}
	return ctx.Err()
}

// List returns the pods of every bridge process in the namespace.
func (k *Kubernetes) List(ctx context.Context) ([]engine.SandboxInfo, error) {
	return k.api.List(ctx)
}

// List implements lifecycle.API.
func (a *kubeAPI) List(ctx context.Context) ([]engine.SandboxInfo, error) {
	list, err := a.cs.CoreV1().Pods(a.ns).List(ctx, metav1.ListOptions{LabelSelector: engine.LabelBridge + "=1"})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", a.explain(err, "list", "pods"))
	}
	out := make([]engine.SandboxInfo, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, engine.SandboxInfo{ID: p.Name, Labels: p.Labels, State: kubeState(&p)})
	}
	return out, nil
}

// kubeState is a pod's state in the other engines' words: "running",
// "exited", "created" (not yet running), "removing".
func kubeState(p *corev1.Pod) string {
	switch {
	case p.DeletionTimestamp != nil:
		return "removing"
	case p.Status.Phase == corev1.PodRunning:
		return "running"
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return "exited"
	}
	return "created"
}

// errKubeVolumes refuses named volumes on pods, which have none to mount.
var errKubeVolumes = errors.New("the kubernetes backend keeps no named volumes: package sets (MCP_BRIDGE_PACKAGES) need Docker or Podman; on pods, runtime.install installs into the session")

// HasImage implements lifecycle.API: the API server cannot tell what
// a node holds; the kubelet reports a missing image as the pod starts
// (ErrImageNeverPull), and attach reports it at once.
func (a *kubeAPI) HasImage(context.Context, string) (bool, error) { return true, nil }

// PullImage implements lifecycle.API: the kubelet pulls (or not).
func (a *kubeAPI) PullImage(context.Context, string) error { return nil }

// Create implements lifecycle.API: the pod is created, and runs at once;
// its process waits for the runtime's source on its standard input.
func (a *kubeAPI) Create(ctx context.Context, spec engine.Spec, o lifecycle.Owner, _ string) (string, error) {
	if len(spec.Volumes) > 0 {
		return "", fmt.Errorf("creating a pod: %w", errKubeVolumes)
	}
	if a.claims != nil {
		return a.claims.Create(ctx, a, spec, o)
	}
	pod := kubePod(spec, o, kubePodName(spec.Session), a.pod)
	got, err := a.cs.CoreV1().Pods(a.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return "", a.explain(err, "create", "pods")
	}
	return got.Name, nil
}

// Verify implements lifecycle.API: an admission webhook may have changed
// the pod; what it holds must still be hardened as built.
func (a *kubeAPI) Verify(ctx context.Context, id string, spec engine.Spec) error {
	if _, ok := a.claims.claimed(id); ok {
		return a.claims.Verify(ctx, a, id, spec)
	}
	p, err := a.cs.CoreV1().Pods(a.ns).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		return a.explain(err, "get", "pods")
	}
	return kubeCheckHardened(p, spec)
}

// Ops implements lifecycle.API.
func (a *kubeAPI) Ops(id string) lifecycle.Ops {
	return &kubeContainerOps{a: a, name: id, uid: a.claims.uid(id)}
}

// Stop implements lifecycle.API: the pod is deleted at once (its PID 1
// ignores SIGTERM); a pod already gone is no error.
func (a *kubeAPI) Stop(ctx context.Context, id string, _ time.Duration) error {
	return a.Remove(ctx, id)
}

// Remove implements lifecycle.API.
func (a *kubeAPI) Remove(ctx context.Context, id string) error {
	if _, err := a.claims.Remove(ctx, a, id); err != nil {
		return err
	}
	var zero int64
	err := a.cs.CoreV1().Pods(a.ns).Delete(ctx, id, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return a.explain(err, "delete", "pods")
	}
	return nil
}
