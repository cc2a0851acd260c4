package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/servers"
)

// The statuses of a check.
const (
	statusOK   = "ok"
	statusFail = "fail"
	statusSkip = "skip"
	statusWarn = "warn"
)

// A checkResult is the outcome of one check of doctor: one line of its
// report, one object of its JSON array. The fields after DurationMS are
// the facts of some checks, left out when empty.
type checkResult struct {
	Check      string `json:"check"`
	Status     string `json:"status"`
	Detail     string `json:"detail"`
	Hint       string `json:"hint,omitempty"`
	DurationMS int64  `json:"duration_ms"`

	// settings: this build's version, as `version` prints it; the
	// settings that are set, with where each came from, and how many
	// others have their defaults
	BridgeVersion string        `json:"bridge_version,omitempty"`
	Settings      []settingJSON `json:"settings,omitempty"`
	Defaults      *int          `json:"defaults,omitempty"`
	// engine
	Engine     string `json:"engine,omitempty"`
	Version    string `json:"version,omitempty"`
	APIVersion string `json:"api_version,omitempty"`
	Address    string `json:"address,omitempty"`
	Context    string `json:"context,omitempty"` // the Docker context or Podman connection Address comes from
	// image, hardening
	Image string `json:"image,omitempty"`
	// hardening: the container's start and what its probe found;
	// server: the server's start and tool list
	StartMS    *int64          `json:"start_ms,omitempty"`
	Properties []probeProperty `json:"properties,omitempty"`
	// runtime
	WantRuntime string `json:"want_runtime,omitempty"`
	Runtime     string `json:"runtime,omitempty"`
	// config
	File    string      `json:"file,omitempty"`
	Line    int         `json:"line,omitempty"`
	Column  int         `json:"column,omitempty"`
	Servers []string    `json:"servers,omitempty"`
	Entries []entryJSON `json:"entries,omitempty"`
	// server
	Server string `json:"server,omitempty"`
	Source string `json:"source,omitempty"`
	Tools  *int   `json:"tools,omitempty"`
	Stderr string `json:"stderr,omitempty"`
	// routes: a sandbox pod's routes out, and the NetworkPolicies that
	// select it and govern its egress
	Routes   []string `json:"routes,omitempty"`
	Policies []string `json:"policies,omitempty"`
}

// An entryJSON is a skipped server entry of a configuration file.
type entryJSON struct {
	Server string `json:"server"`
	Error  string `json:"error"`
	Benign bool   `json:"benign,omitempty"`
}

// Bounds of the checks.
const (
	// engineTimeout bounds connecting to the engine and describing it.
	engineTimeout = 10 * time.Second
	// engineStartTimeout replaces engineTimeout when the bridge may
	// start a Podman service of its own, which takes up to 20 s.
	engineStartTimeout = 25 * time.Second
	// imageTimeout bounds looking the image up; pullTimeout, pulling it.
	imageTimeout = 10 * time.Second
	pullTimeout  = 60 * time.Second
	// probeTimeout bounds the probe container, from create to exit.
	probeTimeout = 60 * time.Second
	// inspectTimeout bounds asking the probe container's OCI runtime.
	inspectTimeout = 10 * time.Second
	// defaultServerTimeout bounds starting one server and listing its
	// tools (-timeout).
	defaultServerTimeout = 30 * time.Second
	// serverConcurrency is how many servers start at once.
	serverConcurrency = 4
)

// A doctor checks a setup, in order, and reports each check as it ends.
type doctor struct {
	getenv  func(string) string
	stderr  io.Writer // the logs'
	log     *slog.Logger
	timeout time.Duration // per server
	// newEngine returns the engine the settings select and the function
	// closing it; newDoctorEngine but in tests.
	newEngine func(cfg *config.Config, log *slog.Logger) (engine.Engine, func())
	// report receives each result as its check ends.
	report func(checkResult)
	// resolver resolves the network section's names. Zero:
	// net.DefaultResolver.
	resolver resolver
}

// doctorCommand checks the setup and prints one line per check (or, with
// -json, one JSON array); it exits 0 when every check passed, 1 when one
// failed, 2 on a usage error.
func doctorCommand(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return runDoctor(ctx, args, stdout, stderr, getenv, newDoctorEngine)
}

// runDoctor is doctorCommand with the engine's constructor.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string,
	newEngine func(*config.Config, *slog.Logger) (engine.Engine, func())) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON array of the checks on stdout")
	timeout := fs.Duration("timeout", defaultServerTimeout, "bound of starting one MCP server and listing its tools")
	if code, ok := parseFlags(fs, doctorUsage, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: doctor: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *timeout <= 0 {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: doctor: -timeout %v: want a positive duration, such as 30s\n", *timeout)
		return 2
	}
	var results []checkResult
	d := &doctor{getenv: getenv, stderr: stderr, timeout: *timeout, newEngine: newEngine}
	d.report = func(r checkResult) {
		results = append(results, r)
		if !*asJSON {
			printResult(stdout, r)
		}
	}
	d.run(ctx)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(results)
	}
	for _, r := range results {
		if r.Status == statusFail {
			return 1
		}
	}
	return 0
}

// run runs every check in order.
func (d *doctor) run(ctx context.Context) {
	began := time.Now()
	cfg, err := config.Load(d.getenv)
	if err != nil {
		d.report(withSettings(checkResult{Check: "settings", Status: statusFail, Detail: err.Error(), DurationMS: sinceMS(began),
			Hint: "fix the variables named; " + config.SettingsDocPath + " lists every one"}, d.getenv))
		for _, c := range []string{"engine", "image", "hardening", "runtime", "config", "server", "network", "packages"} {
			d.report(skipped(c, "the settings are invalid"))
		}
		return
	}
	d.log = cfg.Logger(d.stderr, slog.LevelWarn)
	d.report(withSettings(settingsResult(cfg, began), d.getenv))
	d.checkEngine(ctx, cfg)
	d.checkConfigs(ctx, cfg)
	d.checkNetwork(ctx, cfg)
	d.checkPackages(ctx, cfg)
}

// newDoctorEngine returns the engine cfg selects, made as run and exec
// make theirs (it connects on first use), and the function closing it.
func newDoctorEngine(cfg *config.Config, log *slog.Logger) (engine.Engine, func()) {
	eng := newEngine(cfg, log)
	return eng, func() { eng.Close() }
}

// settingsResult describes the settings that the later checks hold the
// setup to.
func settingsResult(cfg *config.Config, began time.Time) checkResult {
	spec := cfg.Session.Spec.WithDefaults()
	backend := "engine " + cfg.Engine.Backend
	switch {
	case len(cfg.Engines) > 0:
		var names []string
		for _, ep := range cfg.Engines {
			names = append(names, ep.Name())
		}
		backend = "engines " + strings.Join(names, ", ")
	case cfg.Engine.Backend == "":
		backend = "engine auto (podman, then docker)"
	}
	oci := spec.OCIRuntime
	if oci == "" {
		oci = "the engine's default"
	}
	cpus := "no cap"
	if spec.NanoCPUs > 0 {
		cpus = fmt.Sprintf("%g", float64(spec.NanoCPUs)/1e9)
	}
	return checkResult{Check: "settings", Status: statusOK, DurationMS: sinceMS(began), Image: spec.Image, BridgeVersion: version,
		Detail: fmt.Sprintf("mcp-server-code-execution-mode %s; %s, image %s, user %s, memory %s, pids %d, cpus %s, OCI runtime %s",
			version, backend, spec.Image, spec.User, engine.FormatBytes(spec.MemoryBytes), spec.PidsLimit, cpus, oci)}
}

// checkConfigs checks every discovered configuration file, then starts
// every configured server.
func (d *doctor) checkConfigs(ctx context.Context, cfg *config.Config) {
	reg := discovery.NewRegistry(cfg.Bridge.Discovery)
	began := time.Now()
	files := reg.Check()
	if len(files) == 0 {
		d.report(checkResult{Check: "config", Status: statusOK, DurationMS: sinceMS(began),
			Detail: "no MCP server configuration file found (see docs/GUIDE.md, Calling other MCP servers)"})
	}
	for _, f := range files {
		d.report(configResult(f, began))
	}
	began = time.Now()
	reports := servers.Check(ctx, reg, &servers.CheckOptions{
		Timeout: d.timeout, Concurrency: serverConcurrency, Version: version, Logger: d.log})
	if len(reports) == 0 {
		d.report(checkResult{Check: "server", Status: statusOK, DurationMS: sinceMS(began), Detail: "no MCP server configured"})
	}
	for _, s := range reports {
		d.report(serverResult(s))
	}
}

// configResult reports one configuration file.
func configResult(f discovery.ConfigFileReport, began time.Time) checkResult {
	r := checkResult{Check: "config", Status: statusOK, DurationMS: sinceMS(began), File: f.Path,
		Line: f.Line, Column: f.Column, Servers: f.Servers}
	var bad, benign []string
	for _, e := range f.Entries {
		r.Entries = append(r.Entries, entryJSON{Server: e.Server, Error: e.Err.Error(), Benign: e.Benign})
		if e.Benign {
			benign = append(benign, fmt.Sprintf("%q skipped: %v", e.Server, e.Err))
		} else {
			bad = append(bad, fmt.Sprintf("server %q: %v", e.Server, e.Err))
		}
	}
	switch {
	case f.Err != nil && f.Line > 0:
		r.Status, r.Detail = statusFail, fmt.Sprintf("%s:%d:%d: %v", f.Path, f.Line, f.Column, f.Err)
		r.Hint = "fix the file or remove it; other files are still read"
	case f.Err != nil:
		r.Status, r.Detail = statusFail, fmt.Sprintf("%s: %v", f.Path, f.Err)
		r.Hint = "fix the file or remove it; other files are still read"
	case len(bad) > 0:
		r.Status, r.Detail = statusFail, fmt.Sprintf("%s: %s; read %s", f.Path, strings.Join(bad, "; "), serverList(f.Servers))
		r.Hint = "each entry needs a \"command\" (a string), and \"args\" a list, \"env\" an object; the other entries are still read"
	default:
		r.Detail = fmt.Sprintf("%s: %s", f.Path, serverList(f.Servers))
	}
	if len(benign) > 0 {
		r.Detail += "; " + strings.Join(benign, "; ")
	}
	return r
}

// serverResult reports one configured server.
func serverResult(s servers.Report) checkResult {
	took := s.Took.Milliseconds()
	r := checkResult{Check: "server", Status: statusOK, DurationMS: took, Server: s.Server, Source: s.Source,
		StartMS: &took, Stderr: s.Stderr}
	if s.Err != nil {
		r.Status = statusFail
		r.Detail = fmt.Sprintf("%s: %v", s.Server, s.Err)
		if s.Stderr != "" {
			r.Detail += "; its stderr: " + s.Stderr
		}
		r.Hint = fmt.Sprintf("run it by hand (%s) to see why; it is defined in %s", s.Command, s.Source)
		return r
	}
	tools := s.Tools
	r.Tools = &tools
	r.Detail = fmt.Sprintf("%s: started, %s", s.Server, plural(s.Tools, "tool", "tools"))
	if s.Tools == 0 {
		r.Status = statusWarn
		r.Hint = "the server started but lists no tools, so the sandbox has nothing to call on it"
	}
	return r
}

// serverList says how many servers names holds, and which.
func serverList(names []string) string {
	if len(names) == 0 {
		return "no servers"
	}
	return plural(len(names), "server", "servers") + " (" + strings.Join(names, ", ") + ")"
}

// skipped is the result of a check that could not run, and why.
func skipped(check, why string) checkResult {
	return checkResult{Check: check, Status: statusSkip, Detail: why}
}

// printResult writes r as one line, and its hint on the next.
func printResult(w io.Writer, r checkResult) {
	status := r.Status
	if status == statusFail {
		status = "FAIL"
	}
	line := fmt.Sprintf("%-6s%-10s%s", status, r.Check, r.Detail)
	if r.Status != statusSkip {
		line += fmt.Sprintf("    %d ms", r.DurationMS)
	}
	fmt.Fprintln(w, line)
	if r.Hint != "" && r.Status != statusOK {
		fmt.Fprintf(w, "%6shint: %s\n", "", r.Hint)
	}
	printSettings(w, r)
}

func sinceMS(t time.Time) int64 { return time.Since(t).Milliseconds() }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
