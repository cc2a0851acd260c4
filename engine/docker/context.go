package docker

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/docker/cli/cli/connhelper"
	ctxdocker "github.com/docker/cli/cli/context/docker"
	"github.com/docker/cli/cli/context/store"
	"github.com/docker/docker/client"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// The sources of a dockerEndpoint: what chose the daemon it names.
const (
	dockerSourceOption     = "option"                     // Options.Host or Context
	dockerSourceHostEnv    = "DOCKER_HOST"                // the environment's daemon address
	dockerSourceContextEnv = "DOCKER_CONTEXT"             // the environment's context
	dockerSourceConfig     = "config.json currentContext" // the context `docker context use` chose
	dockerSourceDefault    = "default"                    // nothing: the default socket
)

// dockerDefaultContext is the name of the context that is no stored
// context: the daemon of DOCKER_HOST, else the default socket, with the
// TLS settings of DOCKER_TLS_VERIFY and DOCKER_CERT_PATH.
const dockerDefaultContext = "default"

// A dockerEndpoint is where the Docker daemon is reached, found as the
// docker CLI finds it, and what chose it.
type dockerEndpoint struct {
	// Host is the daemon's address: unix://, tcp://, ssh://, npipe://.
	Host string
	// Context is the name of the Docker context Host comes from: ""
	// when none named it, "default" when one named the default context.
	Context string
	// Source is what chose Host, or the context: one of the
	// dockerSource constants.
	Source string
	// Warning is what the user should know about the choice, such as
	// DOCKER_HOST overriding DOCKER_CONTEXT; "" when nothing.
	Warning string
	// envTLS tells whether the client takes DOCKER_TLS_VERIFY,
	// DOCKER_CERT_PATH and DOCKER_API_VERSION from the environment, as
	// for the daemon of DOCKER_HOST or the default socket.
	envTLS bool
	// stored is the docker endpoint of a stored context, with its TLS
	// material; nil when no stored context is used.
	stored *ctxdocker.Endpoint
}

// where names the endpoint in errors: its address, and its context when
// a stored context named it.
func (ep dockerEndpoint) where() string {
	if ep.stored == nil {
		return ep.Host
	}
	return fmt.Sprintf("%s (context %q)", ep.Host, ep.Context)
}

// logArgs are the attributes that describe the endpoint in a log line.
func (ep dockerEndpoint) logArgs() []any {
	args := []any{"host", ep.Host}
	if ep.Context != "" {
		args = append(args, "context", ep.Context)
	}
	return append(args, "source", ep.Source)
}

// resolveDockerEndpoint finds the daemon that opts and the environment
// (read with getenv) select, by the docker CLI's precedence:
// Options.Host, Options.Context, DOCKER_HOST, DOCKER_CONTEXT,
// the currentContext of the CLI's config.json ($DOCKER_CONFIG, else
// ~/.docker), else the default socket. The context named "default" is no
// stored context: DOCKER_HOST, else the default socket. It reads the
// CLI's configuration and context store but connects to nothing. An error
// names the context, the file or directory at fault, and what named the
// context.
func resolveDockerEndpoint(opts *Options, getenv func(string) string) (dockerEndpoint, error) {
	if opts == nil {
		opts = &Options{}
	}
	switch {
	case opts.Host != "" && opts.Context != "":
		return dockerEndpoint{}, fmt.Errorf("docker: both a host (%s) and a context (%q) are set; set one", opts.Host, opts.Context)
	case opts.Host != "":
		return dockerEndpoint{Host: opts.Host, Source: dockerSourceOption}, nil
	case opts.Context != "":
		// As `docker --context`, an explicit context overrides DOCKER_HOST.
		return dockerContext(opts.Context, dockerSourceOption, "Options.Context", getenv)
	}
	if h := getenv("DOCKER_HOST"); h != "" {
		ep := dockerEndpoint{Host: h, Source: dockerSourceHostEnv, envTLS: true}
		if c := getenv("DOCKER_CONTEXT"); c != "" && c != dockerDefaultContext {
			ep.Warning = fmt.Sprintf("DOCKER_HOST overrides DOCKER_CONTEXT=%q, as it does for the docker CLI", c)
		}
		return ep, nil
	}
	if c := getenv("DOCKER_CONTEXT"); c != "" {
		return dockerContext(c, dockerSourceContextEnv, "DOCKER_CONTEXT", getenv)
	}
	dir := dockerConfigDir(getenv)
	if dir != "" {
		file := filepath.Join(dir, "config.json")
		current, err := readCurrentContext(file)
		if current != "" {
			return dockerContext(current, dockerSourceConfig, "currentContext in "+file, getenv)
		}
		if err != nil {
			// The CLI warns and goes on with the default context.
			return dockerEndpoint{Host: client.DefaultDockerHost, Source: dockerSourceDefault, envTLS: true,
				Warning: err.Error() + "; using the default socket, as the docker CLI does"}, nil
		}
	}
	return dockerEndpoint{Host: client.DefaultDockerHost, Source: dockerSourceDefault, envTLS: true}, nil
}

// dockerContext returns the endpoint of the context called name, which
// source (setBy, as errors say it) named.
func dockerContext(name, source, setBy string, getenv func(string) string) (dockerEndpoint, error) {
	if name == dockerDefaultContext {
		return dockerEndpoint{Host: cmp.Or(getenv("DOCKER_HOST"), client.DefaultDockerHost), Context: name,
			Source: source, envTLS: true}, nil
	}
	dir := dockerConfigDir(getenv)
	if dir == "" {
		return dockerEndpoint{}, fmt.Errorf("docker context %q: no docker config directory to look it up in "+
			"(DOCKER_CONFIG and the home directory are unset) (set by %s)", name, setBy)
	}
	contexts := filepath.Join(dir, "contexts")
	s := store.New(contexts, store.NewConfig(nil,
		store.EndpointTypeGetter(ctxdocker.DockerEndpoint, func() any { return &ctxdocker.EndpointMeta{} })))
	info := s.GetStorageInfo(name)
	metaFile := filepath.Join(info.MetadataPath, "meta.json")
	md, err := s.GetMetadata(name)
	if errors.Is(err, fs.ErrNotExist) {
		return dockerEndpoint{}, fmt.Errorf("docker context %q: not found in %s (set by %s)", name, contexts, setBy)
	}
	if err != nil {
		// The store's error says `context "name": ` before what is wrong
		// with the file, naming it when it cannot be parsed.
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		var pe *fs.PathError
		switch {
		case errors.As(err, &pe):
			err = fmt.Errorf("reading %s: %w", pe.Path, pe.Err)
		case !strings.Contains(err.Error(), metaFile):
			err = fmt.Errorf("reading %s: %w", metaFile, err)
		}
		return dockerEndpoint{}, fmt.Errorf("docker context %q: %w (set by %s)", name, err, setBy)
	}
	meta, err := ctxdocker.EndpointFromContext(md)
	if err != nil {
		return dockerEndpoint{}, fmt.Errorf("docker context %q: %s has no docker endpoint (set by %s)", name, metaFile, setBy)
	}
	stored, err := ctxdocker.WithTLSData(s, name, meta)
	if err != nil {
		return dockerEndpoint{}, fmt.Errorf("docker context %q: reading its TLS files in %s: %w (set by %s)",
			name, info.TLSPath, err, setBy)
	}
	return dockerEndpoint{Host: cmp.Or(meta.Host, client.DefaultDockerHost), Context: name, Source: source, stored: &stored}, nil
}

// dockerConfigDir returns the docker CLI's configuration directory:
// DOCKER_CONFIG, else .docker in the home directory; "" when there is
// no home directory either.
func dockerConfigDir(getenv func(string) string) string {
	if dir := getenv("DOCKER_CONFIG"); dir != "" {
		return dir
	}
	home := lifecycle.HomeDir(getenv)
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".docker")
}

// readCurrentContext returns the currentContext of the docker CLI's
// config.json at file: "" when the file does not exist or names none.
// Only that key is decoded, not the registry credentials beside it.
func readCurrentContext(file string) (string, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the docker CLI's config: %w", err)
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("reading the docker CLI's config %s: %w", file, err)
	}
	return cfg.CurrentContext, nil
}

// clientOpts returns the options of a client of the daemon at ep: a
// stored context's as the docker CLI makes them (its TLS material, ssh
// through connhelper), else the address with the environment's TLS
// settings when envTLS is set.
func (ep dockerEndpoint) clientOpts() ([]client.Opt, error) {
	if ep.stored != nil {
		copts, err := ep.stored.ClientOpts()
		if err != nil {
			what := "loading the context's TLS files"
			if strings.HasPrefix(ep.Host, "ssh://") {
				what = "setting up ssh connection"
			}
			return nil, fmt.Errorf("docker at %s: %s: %w", ep.where(), what, err)
		}
		return copts, nil
	}
	copts := []client.Opt{client.WithAPIVersionNegotiation()}
	if ep.envTLS {
		copts = append(copts, client.FromEnv)
	}
	if strings.HasPrefix(ep.Host, "ssh://") {
		helper, err := connhelper.GetConnectionHelper(ep.Host)
		if err != nil {
			return nil, fmt.Errorf("docker at %s: setting up ssh connection: %w", ep.Host, err)
		}
		return append(copts, client.WithHost(helper.Host), client.WithDialContext(helper.Dialer)), nil
	}
	return append(copts, client.WithHost(ep.Host)), nil
}

// Endpoint returns the address of the Docker daemon New
// reaches when its Options.Host is host and its Context is context,
// reading the environment with getenv (nil: os.Getenv), and the name of
// the Docker context that address comes from ("" when none did). It
// connects to nothing; an error is one New would return, such as a
// context that does not exist.
func Endpoint(host, context string, getenv func(string) string) (addr, contextName string, err error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	ep, err := resolveDockerEndpoint(&Options{Host: host, Context: context}, getenv)
	return ep.Host, ep.Context, err
}
