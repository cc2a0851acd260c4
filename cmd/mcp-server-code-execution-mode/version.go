package main

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/podman"
)

// version names this build: set at build time with -ldflags
// "-X main.version=…" (the Makefile and scripts/bridge-image set it from
// git describe); else, at start, what the Go toolchain stamped
// (buildVersion).
var version = ""

func init() {
	if version == "" {
		info, ok := debug.ReadBuildInfo()
		version = buildVersion(info, ok)
	}
}

// versionCommand prints the version.
func versionCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if code, ok := parseFlags(fs, versionUsage, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: version takes no arguments (got %q)\n", fs.Args())
		return 2
	}
	fmt.Fprintln(stdout, versionLine(podman.Compiled))
	return 0
}

// buildVersion returns the version the toolchain stamped in info: the
// module's version for `go install …@vX` (and, since Go 1.24, a
// pseudo-version for `go build` in a git checkout), else the VCS revision
// (12 hex digits, "+dirty" when the tree had changes), else "dev".
func buildVersion(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "dev"
	}
	rev = rev[:min(12, len(rev))]
	if strings.EqualFold(modified, "true") {
		rev += "+dirty"
	}
	return rev
}
