package engine

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// maxEndpoints bounds the engines one list may name.
const maxEndpoints = 64

// An Endpoint is one container engine a Multi may place sandboxes on: a
// backend and the address it answers at.
type Endpoint struct {
	// Backend is BackendDocker or BackendPodman.
	Backend string
	// Address is the engine's address (unix://, tcp://, ssh://). Zero:
	// the backend's default (Docker: DOCKER_HOST or the Docker context;
	// Podman: the connection CONTAINER_CONNECTION names, CONTAINER_HOST,
	// the usual sockets, the default Podman connection).
	Address string
	// CertPath is a directory with ca.pem, cert.pem and key.pem for
	// mutual TLS to a Docker daemon at a tcp:// address. Zero: no TLS.
	CertPath string
}

// Name names the endpoint in logs, errors, metrics and health reports:
// "docker", or "docker@tcp://10.0.0.5:2376" when it has an address.
func (ep Endpoint) Name() string {
	if ep.Address == "" {
		return ep.Backend
	}
	return ep.Backend + "@" + ep.Address
}

// ParseEndpoints parses a list of engines as MCP_BRIDGE_ENGINES spells it:
// entries separated by commas or white space, each BACKEND or
// BACKEND=ADDRESS, where a Docker tcp:// address may end in
// ?certs=DIR (mutual TLS with DIR's ca.pem, cert.pem and key.pem):
//
//	docker, podman=unix:///run/podman/podman.sock,
//	docker=tcp://10.0.0.5:2376?certs=/etc/mcp/tls/b
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
	backend, addr, hasAddr := strings.Cut(f, "=")
	ep := Endpoint{Backend: strings.ToLower(backend)}
	if ep.Backend != BackendDocker && ep.Backend != BackendPodman {
		return Endpoint{}, fmt.Errorf("unknown backend %q: want %q or %q", backend, BackendDocker, BackendPodman)
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
