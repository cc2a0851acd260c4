package kube

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A kubeAPI is the Kubernetes backend's lifecycle.API.
type kubeAPI struct {
	cs   kubernetes.Interface
	rest *rest.Config
	ns   string
	pod  kubePodOptions
	log  *slog.Logger
	// claims makes the sandboxes SandboxClaims; nil without a template.
	claims *kubeClaims
}

// explain returns err, an API server's answer to verb on resource, with
// what it means for the bridge.
func (a *kubeAPI) explain(err error, verb, resource string) error {
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s in namespace %q: the namespace does not exist (create it, or set MCP_BRIDGE_K8S_NAMESPACE): %w", verb, resource, a.ns, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s %s in namespace %q is forbidden to this identity (RBAC; or the namespace may not exist: the API server refuses an identity without rights there either way): %w", verb, resource, a.ns, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server does not accept this identity's credentials: %w", err)
	case a.ConnFailed(err):
		return fmt.Errorf("%w: %w", engine.ErrNoEngine, err)
	}
	return err
}

// ConnFailed implements lifecycle.API.
func (a *kubeAPI) ConnFailed(err error) bool {
	var ue *url.Error
	var ne *net.OpError
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED)
}

// executor returns a stream executor of url: WebSocket, falling back to
// SPDY when the server refuses the upgrade.
func (a *kubeAPI) executor(url string) (remotecommand.Executor, error) {
	u, err := parseURL(url)
	if err != nil {
		return nil, err
	}
	ws, err := remotecommand.NewWebSocketExecutor(a.rest, http.MethodGet, u.String())
	if err != nil {
		return nil, fmt.Errorf("attaching: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(a.rest, http.MethodPost, u)
	if err != nil {
		return nil, fmt.Errorf("attaching: %w", err)
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// parseURL parses a request URL of client-go's.
func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("the API server's URL: %w", err)
	}
	return u, nil
}
