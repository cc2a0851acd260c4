package config

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/packages"
)

// maxPackagesFileBytes bounds a requirements file.
const maxPackagesFileBytes = 1 << 20

// packageOptions reads the package settings: the set every sandbox gets
// (MCP_BRIDGE_PACKAGES or MCP_BRIDGE_PACKAGES_FILE, not both), the
// indexes and the hosts of their files, builds from source, the bounds
// and pip's wheel.
func (r *reader) packageOptions() packages.Options {
	var o packages.Options
	switch list, file := r.get(EnvPackages), r.path(EnvPackagesFile); {
	case list != "" && file != "":
		r.errs = append(r.errs, fmt.Errorf("%s and %s are both set: set one", EnvPackages, EnvPackagesFile))
	case list != "":
		reqs, err := packages.ParseList(list)
		if err != nil {
			r.errs = append(r.errs, fmt.Errorf("%s: %w", EnvPackages, err))
		}
		o.Requirements = reqs
	case file != "":
		o.Requirements = r.requirementsFile(file)
	}
	if v := r.get(EnvPipIndexURL); v != "" {
		if err := packages.CheckIndexURL(v); err != nil {
			r.errs = append(r.errs, fmt.Errorf("%s: %v", EnvPipIndexURL, err))
		}
		o.IndexURL = v
	}
	for _, v := range strings.FieldsFunc(r.get(EnvPipExtraIndex), func(c rune) bool { return c == ',' || c == ' ' || c == '\t' }) {
		if err := packages.CheckIndexURL(v); err != nil {
			r.errs = append(r.errs, fmt.Errorf("%s: %v", EnvPipExtraIndex, err))
			continue
		}
		o.ExtraIndexURLs = append(o.ExtraIndexURLs, v)
	}
	for _, v := range strings.FieldsFunc(r.get(EnvPipFileHosts), func(c rune) bool { return c == ',' || c == ' ' || c == '\t' }) {
		h, err := packages.CheckFileHost(v)
		if err != nil {
			r.errs = append(r.errs, fmt.Errorf("%s: %v", EnvPipFileHosts, err))
			continue
		}
		o.ExtraFileHosts = append(o.ExtraFileHosts, h)
	}
	o.AllowSdist = r.flag(EnvPipAllowSdist)
	o.CacheMaxBytes = r.size(EnvPackagesCache, 64<<20, 1<<50, "want a size of at least 64m, such as 10g")
	o.SessionMaxBytes = r.size(EnvPackagesSession, 1<<20, 64<<30, "want a size from 1m to 64g, such as 256m")
	o.PipWheel = r.path(EnvPipWheel)
	if o.PipWheel != "" {
		if fi, err := os.Stat(o.PipWheel); err != nil || !fi.Mode().IsRegular() || !strings.HasSuffix(o.PipWheel, ".whl") {
			r.bad(EnvPipWheel, o.PipWheel, "want a pip wheel file (pip-*.whl)")
		}
	}
	return o
}

// requirementsFile reads and checks the requirements file at path.
func (r *reader) requirementsFile(path string) []packages.Requirement {
	f, err := os.Open(path)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %v", EnvPackagesFile, err))
		return nil
	}
	defer f.Close()
	buf := make([]byte, maxPackagesFileBytes+1)
	n, _ := io.ReadFull(f, buf)
	if n > maxPackagesFileBytes {
		r.errs = append(r.errs, fmt.Errorf("%s: %s is over %d bytes", EnvPackagesFile, path, maxPackagesFileBytes))
		return nil
	}
	reqs, err := packages.ParseFile(string(buf[:n]))
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %s: %w", EnvPackagesFile, path, err))
	}
	return reqs
}
