package engine

import (
	"log/slog"
	"time"
)

// PodmanOptions configure NewPodman. The zero value is ready to use.
type PodmanOptions struct {
	// URI is the service address (unix:// or tcp://). Zero:
	// CONTAINER_HOST, then the rootful and rootless sockets, then a
	// `podman system service` started for the bridge's lifetime.
	URI string
	// Logger receives progress and clean-up reports. Zero: discarded.
	Logger *slog.Logger
	// StopGrace is how long Close waits after SIGTERM before SIGKILL.
	// Zero: two seconds.
	StopGrace time.Duration
}
