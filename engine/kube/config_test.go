package kube

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// TestKubeConfigMissing: a KUBECONFIG naming no file that exists is
// reported naming it (client-go alone skips it and says only that no
// configuration was given), as an unreachable engine, which the message
// says once.
func TestKubeConfigMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such.kubeconfig")
	t.Setenv("KUBECONFIG", missing)
	_, _, err := kubeConfig(&engine.KubernetesOptions{})
	if err == nil || !errors.Is(err, engine.ErrNoEngine) || !errors.Is(err, fs.ErrNotExist) ||
		!strings.Contains(err.Error(), "KUBECONFIG="+missing) || strings.Contains(err.Error(), engine.ErrNoEngine.Error()) {
		t.Fatalf("a missing KUBECONFIG: %v", err)
	}
	_, _, err = kubeConfig(&engine.KubernetesOptions{Kubeconfig: missing})
	if err == nil || !errors.Is(err, engine.ErrNoEngine) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("a missing explicit kubeconfig: %v", err)
	}
}

// TestKubeCheckNamespaceMissing: pods are listed in a namespace that does
// not exist as in an empty one; an identity that may read namespaces is
// told at the check that it does not exist, naming it.
func TestKubeCheckNamespaceMissing(t *testing.T) {
	a, _ := fakeKube()
	err := a.check(context.Background())
	if err == nil || !strings.Contains(err.Error(), `namespace "sbx" does not exist`) {
		t.Fatalf("check in a namespace that does not exist: %v", err)
	}
}
