//go:build integration && remote

package podman

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/containers/podman/v5/pkg/bindings/system"
)

// TestStartPodmanService starts a private `podman system service` the way
// the bridge does when no service listens, and talks to it.
func TestStartPodmanService(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	svc, err := startPodmanService(ctx, log)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := podmanConnect(ctx, podmanEndpoint{URI: svc.URI})
	if err != nil {
		svc.Close()
		t.Fatal(err)
	}
	v, err := system.Version(mergeValues(ctx, conn), nil)
	if err != nil || v.Server == nil || v.Server.Version == "" {
		svc.Close()
		t.Fatalf("version from the started service: %+v, %v", v, err)
	}
	svc.Close()
	select {
	case <-svc.done:
	default:
		t.Fatal("service still running after Close")
	}
	if _, err := os.Stat(svc.dir); !os.IsNotExist(err) {
		t.Fatalf("socket directory %s not removed: %v", svc.dir, err)
	}
}
