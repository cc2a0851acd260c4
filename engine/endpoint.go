package engine

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// maxEndpoints bounds the engines one list may name.
const maxEndpoints = 64

// contextNameRE is what a Docker context or Podman connection an entry
// names may be called: the docker CLI's rule for context names.
var contextNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.+-]+$`)

// An Endpoint is one container engine auto.Multi may place sandboxes on: a
// backend and the address it answers at, or the Docker context or Podman
// connection it is reached through.
type Endpoint struct {
	// Backend is BackendDocker, BackendPodman or BackendKubernetes.
	Backend string
	// Address is the engine's address (unix://, tcp://, ssh://). Zero:
	// the backend's default (Docker: DOCKER_HOST or the Docker context;
	// Podman: the connection CONTAINER_CONNECTION names, CONTAINER_HOST,
	// the usual sockets, the default Podman connection).
	Address string
	// CertPath is a directory with ca.pem, cert.pem and key.pem for
	// mutual TLS to a Docker daemon at a tcp:// address. Zero: no TLS.
	CertPath string
	// Context is the Docker context (docker.Options.Context) or Podman
	// connection (podman.Options.Connection) the engine is reached
	// through; it names its own address, so Address is then zero. Zero:
	// none.
	Context string
}

// Name names the endpoint in logs, errors, metrics and health reports:
// "docker", "docker@tcp://10.0.0.5:2376" when it has an address, or
// "docker@colima" when it is reached through a context. (An address has
// a "://" no context name has, so the names of the two never meet.)
func (ep Endpoint) Name() string {
	switch {
	case ep.Context != "":
		return ep.Backend + "@" + ep.Context
	case ep.Address != "":
		return ep.Backend + "@" + ep.Address
	}
	return ep.Backend
}

// ParseEndpoints parses a list of engines as MCP_BRIDGE_ENGINES spells it:
// entries separated by commas or white space, each BACKEND,
// BACKEND=ADDRESS, where a Docker tcp:// address may end in
// ?certs=DIR (mutual TLS with DIR's ca.pem, cert.pem and key.pem), or
// BACKEND@NAME, the Docker context or Podman connection called NAME (two
// or more letters, digits, '_', '.', '+' and '-', the first a letter or
// digit, as the docker CLI allows):
//
//	docker, podman=unix:///run/podman/podman.sock,
//	docker=tcp://10.0.0.5:2376?certs=/etc/mcp/tls/b,
//	docker@colima, podman@machine-default
//
// An error names the entry and what is wrong with it.
func ParseEndpoints(s string) ([]Endpoint, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	if len(fields) == 0 {
		return nil, fmt.Errorf("lists no engine (want e.g. %q)", "docker,podman=unix:///run/podman/podman.sock")
	}
	if len(fields) > maxEndpoints {
		return nil, fmt.Errorf("lists %d engines; at most %d are allowed", len(fields), maxEndpoints)
	}
	eps := make([]Endpoint, 0, len(fields))
	seen := map[string]int{}
	for i, f := range fields {
		ep, err := parseEndpoint(f)
		if err != nil {
			return nil, fmt.Errorf("engine %d (%q): %w", i+1, f, err)
		}
		if j, dup := seen[ep.Name()]; dup {
			return nil, fmt.Errorf("engine %d (%q): the same engine as engine %d", i+1, f, j)
		}
		seen[ep.Name()] = i + 1
		eps = append(eps, ep)
	}
	return eps, nil
}

// parseEndpoint parses one entry of a list of engines.
func parseEndpoint(f string) (Endpoint, error) {
	if b, ctx, ok := strings.Cut(f, "@"); ok && strings.EqualFold(b, BackendKubernetes) {
		// Any kubeconfig context name (an EKS ARN holds ':' and '/').
		if ctx == "" {
			return Endpoint{}, fmt.Errorf("empty kubeconfig context name after %q", "@")
		}
		return Endpoint{Backend: BackendKubernetes, Context: ctx}, nil
	}
	backend, addr, hasAddr := strings.Cut(f, "=")
	backend, name, hasName := strings.Cut(backend, "@")
	ep := Endpoint{Backend: strings.ToLower(backend)}
	if ep.Backend != BackendDocker && ep.Backend != BackendPodman && ep.Backend != BackendKubernetes {
		return Endpoint{}, fmt.Errorf("unknown backend %q: want %q, %q or %q", backend, BackendDocker, BackendPodman, BackendKubernetes)
	}
	if ep.Backend == BackendKubernetes && hasAddr {
		return Endpoint{}, fmt.Errorf("kubernetes takes no address (%q): its kubeconfig names the API server; name a context as kubernetes@CONTEXT", addr)
	}
	if hasName {
		what := "docker context"
		if ep.Backend == BackendPodman {
			what = "podman connection"
		}
		switch {
		case name == "":
			return Endpoint{}, fmt.Errorf("empty %s name after %q", what, "@")
		case !contextNameRE.MatchString(name):
			return Endpoint{}, fmt.Errorf("%s name %q: want a letter or digit, then one or more letters, digits, '_', '.', '+' or '-'", what, name)
		case hasAddr:
			return Endpoint{}, fmt.Errorf("%s %q and address %q: a context names its own address; give one", what, name, addr)
		}
		ep.Context = name
		return ep, nil
	}
	if !hasAddr {
		return ep, nil
	}
	if addr == "" {
		return Endpoint{}, fmt.Errorf("empty address after %q", "=")
	}
	u, err := url.Parse(addr)
	if err != nil {
		return Endpoint{}, fmt.Errorf("address is not a URL: %w", err)
	}
	q := u.Query()
	for k := range q {
		if k != "certs" {
			return Endpoint{}, fmt.Errorf("unknown parameter %q (want certs=DIR)", k)
		}
	}
	ep.CertPath = q.Get("certs")
	u.RawQuery = ""
	switch u.Scheme {
	case "unix":
		if u.Path == "" {
			return Endpoint{}, fmt.Errorf("unix address %q has no socket path (want unix:///path/to.sock)", addr)
		}
	case "tcp":
		if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" || u.Path != "" {
			return Endpoint{}, fmt.Errorf("tcp address %q: want tcp://HOST:PORT", addr)
		}
	case "ssh":
		if u.Host == "" {
			return Endpoint{}, fmt.Errorf("ssh address %q has no host (want ssh://user@host)", addr)
		}
	default:
		return Endpoint{}, fmt.Errorf("address %q: want a unix://, tcp:// or ssh:// URL", addr)
	}
	ep.Address = u.String()
	if ep.CertPath != "" {
		if ep.Backend != BackendDocker || u.Scheme != "tcp" {
			return Endpoint{}, fmt.Errorf("certs= applies to a docker tcp:// address only")
		}
		if err := checkCertDir(ep.CertPath); err != nil {
			return Endpoint{}, err
		}
	}
	return ep, nil
}

// checkCertDir checks that dir holds the files mutual TLS reads.
func checkCertDir(dir string) error {
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		p := filepath.Join(dir, f)
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("certs directory %s: %w", dir, err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("certs directory %s: %s is not a regular file", dir, f)
		}
	}
	return nil
}
