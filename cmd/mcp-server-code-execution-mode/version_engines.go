package main

import (
	"fmt"
	"runtime"
	"strings"
)

// compiledEngines names the engine backends this binary has: Docker and
// Kubernetes always, Podman when built with its tags.
func compiledEngines(withPodman bool) []string {
	if withPodman {
		return []string{"docker", "podman", "kubernetes"}
	}
	return []string{"docker", "kubernetes"}
}

// versionLine is what `version` prints: the version, the engines compiled
// in (a binary without Podman says how to get it), the platform and the
// Go release that built it.
func versionLine(withPodman bool) string {
	line := fmt.Sprintf("mcp-server-code-execution-mode %s (engines: %s; %s/%s, %s)", version,
		strings.Join(compiledEngines(withPodman), ", "), runtime.GOOS, runtime.GOARCH, runtime.Version())
	if !withPodman {
		line += "\nno Podman backend: build with -tags \"$(cat engine/podman_tags.txt)\" for it"
	}
	return line
}
