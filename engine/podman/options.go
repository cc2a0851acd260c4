// Package podman is the Podman backend of package engine: sandboxes as
// containers of a Podman service, over Podman's Go bindings. The bindings
// are compiled in with the build tags of engine.PodmanBuildTags (this is
// the only package that has them); without them, the package's stub
// reports Podman unavailable (engine.ErrBackendNotCompiled). Each
// container is hardened by podmanSpec, one pure function.
package podman

import (
	"log/slog"
	"time"
)

// Options configure New. The zero value is ready to use.
type Options struct {
	// URI is the service address (unix://, tcp:// or ssh://). Zero: the
	// service found as the podman remote client finds it, named
	// connections (`podman system connection add`) included, tried in
	// this order:
	//
	//  1. the connection Connection names;
	//  2. the connection CONTAINER_CONNECTION names (it overrides
	//     CONTAINER_HOST, as it does for podman);
	//  3. CONTAINER_HOST, with CONTAINER_SSHKEY as the identity of an
	//     ssh:// address;
	//  4. the rootful socket (/run/podman/podman.sock, as root), then the
	//     rootless one ($XDG_RUNTIME_DIR/podman/podman.sock);
	//  5. the default connection (`podman system connection default`,
	//     what `podman machine init` sets on macOS and Windows), when
	//     no socket answers;
	//  6. a `podman system service` started for the bridge's lifetime,
	//     when the podman binary is installed.
	//
	// Only the service URI, Connection, CONTAINER_CONNECTION or
	// CONTAINER_HOST names is tried when one does (steps 1 to 3: no
	// socket, no default connection, no service started). Connections
	// are read from podman-connections.json ($PODMAN_CONNECTIONS_CONF,
	// else $XDG_CONFIG_HOME/containers, else ~/.config/containers), then
	// from [engine.service_destinations] and active_service of the
	// containers.conf files ($CONTAINERS_CONF, else the system's and the
	// user's); a connection is reached with its identity (ssh key) and
	// machine mode. A named connection that does not exist, or a file
	// that cannot be parsed, is an error naming it; the default
	// connection's is logged as a warning, and the service started.
	URI string
	// Connection is the name of a Podman connection (`podman system
	// connection ls`) whose service to reach, with its identity. As
	// `podman --connection`, it overrides CONTAINER_CONNECTION and
	// CONTAINER_HOST; it may not be set with URI. Zero: see URI.
	Connection string
	// Logger receives progress and clean-up reports. Zero: discarded.
	Logger *slog.Logger
	// StopGrace is how long Close waits after SIGTERM before SIGKILL.
	// Zero: two seconds.
	StopGrace time.Duration
	// NoService keeps New from starting a `podman system service` when
	// none answers (step 6 of URI's order). Zero: one is started.
	NoService bool
	// AllowWeakLimits lets sandboxes start when the engine cannot apply
	// their memory, pids and CPU limits (engine.ErrWeakLimits). Zero:
	// none starts then.
	AllowWeakLimits bool
}
