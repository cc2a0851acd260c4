package kube

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// Describe implements Describer: the API server's version, its address
// and the kubeconfig context named.
func (k *Kubernetes) Describe(ctx context.Context) (engine.Info, error) {
	_, kctx, _ := strings.Cut(k.name, "@")
	info := engine.Info{Backend: engine.BackendKubernetes, Address: k.api.rest.Host, Context: kctx}
	v, err := k.api.cs.Discovery().ServerVersion()
	if err != nil {
		return info, fmt.Errorf("kubernetes: asking the version: %w", err)
	}
	info.Version, info.APIVersion = v.GitVersion, v.Major+"."+v.Minor
	return info, ctx.Err()
}

// HasImage implements Describer. The API server cannot tell which images
// a node holds: it reports true, as Start goes ahead (the kubelet reports
// a missing image as the pod starts).
func (k *Kubernetes) HasImage(context.Context, string) (bool, error) { return true, nil }

// PullImage implements Describer: the kubelet pulls (or not).
func (k *Kubernetes) PullImage(context.Context, string) error { return nil }

var _ engine.Describer = (*Kubernetes)(nil)
