package docker

import (
	"log/slog"
	"time"
)

// Options configure New. The zero value is ready to use.
type Options struct {
	// Host is the daemon address (unix://, tcp://, ssh://). Zero: the
	// daemon the docker CLI would reach: that of Context, else
	// DOCKER_HOST (with the TLS settings of DOCKER_TLS_VERIFY and
	// DOCKER_CERT_PATH), else that of the context DOCKER_CONTEXT names,
	// else that of the currentContext of the CLI's config.json
	// ($DOCKER_CONFIG/config.json, else ~/.docker/config.json), else the
	// platform default socket (with the same TLS settings).
	Host string
	// Context is the name of a Docker context (`docker context ls`)
	// whose daemon to reach, with the TLS files the CLI stored for it;
	// "default" is the daemon of DOCKER_HOST, else the default socket.
	// As `docker --context`, it overrides DOCKER_HOST; it may not be set
	// with Host. Zero: DOCKER_CONTEXT, or config.json's currentContext,
	// when DOCKER_HOST is unset (see Host).
	Context string
	// CertPath is a directory holding ca.pem, cert.pem and key.pem: the
	// daemon is reached over TLS, verified against ca.pem, with cert.pem
	// as the client certificate. Zero: DOCKER_CERT_PATH for the daemon
	// of DOCKER_HOST or the default socket when Host is zero too, the
	// TLS files the docker CLI stored for a context, else no TLS.
	CertPath string
	// Logger receives progress and clean-up reports. Zero: discarded.
	Logger *slog.Logger
	// StopGrace is how long Close waits after SIGTERM before SIGKILL.
	// Zero: two seconds.
	StopGrace time.Duration
	// AllowWeakLimits lets sandboxes start when the engine cannot apply
	// their memory, pids and CPU limits (engine.ErrWeakLimits). Zero:
	// none starts then.
	AllowWeakLimits bool
}
