package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/docker"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/podman"
)

// engineHint is the hint of an engine that does not answer.
const engineHint = "start Docker or Podman (scripts/provision starts both), point DOCKER_HOST or CONTAINER_HOST " +
	"at a running engine (or choose a Docker context, DOCKER_CONTEXT or `docker context use`, or a Podman connection, CONTAINER_CONNECTION), " +
	"or set " + config.EnvRuntime + " to the engine you have"

// checkEngine checks the engine cfg selects, or each engine of
// MCP_BRIDGE_ENGINES in turn, as checkOneEngine does.
func (d *doctor) checkEngine(ctx context.Context, cfg *config.Config) {
	if len(cfg.Engines) == 0 {
		d.checkOneEngine(ctx, cfg)
		return
	}
	for _, ep := range cfg.Engines {
		one := *cfg
		one.Engines = nil
		one.Engine.Backend, one.Engine.Address, one.Engine.CertPath = ep.Backend, ep.Address, ep.CertPath
		one.Engine.Context = ep.Context
		d.checkOneEngine(ctx, &one)
	}
}

// checkOneEngine checks that the engine answers, that the sandbox image
// is present, that a probe container starts hardened as the settings
// ask, and that it ran under the OCI runtime asked for (for pods, what
// checkPods checks); a check whose predecessor failed is skipped. The
// probe container is always removed.
func (d *doctor) checkOneEngine(ctx context.Context, cfg *config.Config) {
	eng, closeEngine := d.newEngine(cfg, d.log)
	defer closeEngine()
	spec := cfg.SandboxSpec("doctor", probeCommand)
	info, ok := d.engineCheck(ctx, cfg, eng)
	if !ok {
		checks := []string{"image", "hardening", "runtime"}
		if cfg.Engine.Backend == engine.BackendKubernetes {
			checks = append(checks, "routes")
		}
		why := "the container engine does not answer"
		if info.WeakLimits != "" {
			why = "no sandbox starts on an engine that cannot apply the limits"
		}
		for _, c := range checks {
			d.report(skipped(c, why))
		}
		return
	}
	if info.Backend == engine.BackendKubernetes {
		d.checkPods(ctx, eng, spec)
		return
	}
	if !d.imageCheck(ctx, eng, spec.WithDefaults().Image) {
		for _, c := range []string{"hardening", "runtime"} {
			d.report(skipped(c, "the sandbox image is not available"))
		}
		return
	}
	probe := d.hardeningCheck(ctx, eng, cfg, spec, info.WeakLimits)
	if !probe.started {
		d.report(skipped("runtime", "the probe container did not start"))
		return
	}
	d.report(runtimeResult(info, spec.OCIRuntime, probe))
	d.checkLane(ctx, cfg, eng)
	d.checkSnapshots(ctx, cfg, eng)
}

// checkSnapshots says whether sessions can sleep, wake and fork on the
// engine: a failure when MCP_BRIDGE_SNAPSHOTS asks for it and the engine
// cannot, else, for sandboxes under gVisor, what the engine could do.
func (d *doctor) checkSnapshots(ctx context.Context, cfg *config.Config, eng engine.Engine) {
	on := cfg.Bridge.Session.Sleep != nil
	if !on && !engine.IsGVisor(cfg.Session.Spec.OCIRuntime) {
		return // only gVisor's sandboxes could: nothing to say
	}
	began := time.Now()
	why := engine.CanSnapshot(ctx, eng)
	r := checkResult{Check: "snapshots", Status: statusOK, DurationMS: sinceMS(began)}
	switch {
	case on && why != "":
		r.Status, r.Detail = statusFail, why
		r.Hint = "unset " + config.EnvSnapshots + ", or run Docker with gVisor in experimental mode (scripts/provision)"
	case on:
		r.Detail = "idle sessions sleep and wake with their state, and run_python forks (" + config.EnvSnapshots + "=1)"
	case why != "":
		r.Status, r.Detail = statusSkip, "off ("+config.EnvSnapshots+"); this engine could not: "+why
	default:
		r.Status, r.Detail = statusSkip, "off; this engine can: set "+config.EnvSnapshots+"=1 for sessions that sleep, wake and fork"
	}
	d.report(r)
}

// engineCheck connects to the engine and describes it.
func (d *doctor) engineCheck(ctx context.Context, cfg *config.Config, eng engine.Engine) (engine.Info, bool) {
	timeout := engineTimeout
	if cfg.Engine.Backend != engine.BackendDocker && cfg.Engine.Context == "" &&
		d.getenv("CONTAINER_HOST") == "" && d.getenv("CONTAINER_CONNECTION") == "" {
		timeout = engineStartTimeout // the bridge may start a Podman service
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var info engine.Info
	var err error
	desc, err := engine.As[engine.Describer](ctx, eng)
	switch {
	case err == nil:
		info, err = desc.Describe(ctx)
	case !errors.Is(err, errors.ErrUnsupported):
	default:
		if p, perr := engine.As[engine.Pinger](ctx, eng); perr == nil {
			err = p.Ping(ctx)
		} else {
			err = errors.New("the engine can be neither described nor pinged")
		}
	}
	r := checkResult{Check: "engine", DurationMS: sinceMS(began), Engine: info.Backend, Version: info.Version,
		APIVersion: info.APIVersion, Address: info.Address, Context: info.Context}
	if err != nil {
		r.Status = statusFail
		r.Detail, r.Hint = d.engineFailure(ctx, cfg, err, timeout)
		d.report(r)
		return info, false
	}
	r.Status = statusOK
	if info.Backend == "" {
		r.Detail = "the engine answers (it does not describe itself)"
	} else {
		r.Detail = fmt.Sprintf("%s %s (API %s) at %s", info.Backend, orUnknown(info.Version), orUnknown(info.APIVersion), orUnknown(info.Address))
		if info.Context != "" {
			r.Detail += " (" + contextWords(info.Backend, info.Context) + ")"
		}
		if info.DefaultOCIRuntime != "" {
			r.Detail += ", default OCI runtime " + info.DefaultOCIRuntime
		}
	}
	if info.WeakLimits != "" {
		if !cfg.Engine.AllowWeakLimits {
			r.Status = statusFail
			r.Detail += "; no sandbox starts: " + info.WeakLimits
			r.Hint = "use a rootful engine, or cgroup v2 with the memory, pids and cpu controllers delegated to the user; or set MCP_BRIDGE_ALLOW_WEAK_LIMITS=1 to run sandboxes without those limits"
			d.report(r)
			return info, false
		}
		r.Status = statusWarn
		r.Detail += "; sandboxes run WITHOUT memory, pids and CPU limits (MCP_BRIDGE_ALLOW_WEAK_LIMITS=1): " + info.WeakLimits
		r.Hint = "use a rootful engine, or cgroup v2 with the memory, pids and cpu controllers delegated to the user, and unset MCP_BRIDGE_ALLOW_WEAK_LIMITS"
	}
	d.report(r)
	return info, true
}

// engineFailure says why the engine did not answer, and what to do: the
// advice the error ends with (Auto's, after ErrNoEngine), else
// engineHint.
func (d *doctor) engineFailure(ctx context.Context, cfg *config.Config, err error, timeout time.Duration) (detail, hint string) {
	if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer from %s within %v: %v", d.engineWhere(cfg), timeout, err), engineHint
	}
	msg := err.Error()
	for _, advice := range []string{"Start Docker or Podman", "The engine's TLS"} {
		if i := strings.Index(msg, advice); i > 0 {
			return strings.TrimSpace(msg[:i]), strings.ToLower(msg[i:i+1]) + msg[i+1:]
		}
	}
	return msg, engineHint
}

// engineWhere names the engine cfg selects and where it is looked for:
// for Docker, where the docker CLI would look (DOCKER_HOST, the Docker
// context, the default socket), and the context; for Podman, where the
// podman remote client would (CONTAINER_CONNECTION's connection,
// CONTAINER_HOST), else the usual sockets and the default connection
// tried after them, and the connection. For an engine reached through a
// Docker context or Podman connection (docker@NAME in
// MCP_BRIDGE_ENGINES), it is that context's address, and its name.
func (d *doctor) engineWhere(cfg *config.Config) string {
	addr, name := cfg.Engine.Address, cfg.Engine.Context
	switch cfg.Engine.Backend {
	case engine.BackendDocker:
		host, dctx, err := docker.Endpoint(addr, name, d.getenv)
		switch {
		case err != nil && name != "":
			// The engine's own error says why.
			return fmt.Sprintf("docker (%s)", contextWords(engine.BackendDocker, name))
		case err != nil:
			return fmt.Sprintf("docker (%v)", err)
		case dctx != "":
			return fmt.Sprintf("docker at %s (%s)", host, contextWords(engine.BackendDocker, dctx))
		}
		addr = host
	case engine.BackendPodman:
		t, err := podman.Endpoint(addr, name, d.getenv)
		switch {
		case err != nil && name != "":
			return fmt.Sprintf("podman (%s)", contextWords(engine.BackendPodman, name))
		case err != nil:
			return fmt.Sprintf("podman (%v)", err)
		case t.Connection != "":
			return fmt.Sprintf("podman at %s (%s)", t.Address, contextWords(engine.BackendPodman, t.Connection))
		case t.DefaultConnection != "":
			return fmt.Sprintf("podman at the usual sockets, then at %s (default %s)", t.DefaultAddress,
				contextWords(engine.BackendPodman, t.DefaultConnection))
		}
		addr = cmp.Or(t.Address, "the usual sockets")
	default:
		return "podman or docker"
	}
	return cfg.Engine.Backend + " at " + addr
}

// contextWords names what an engine's address came from: a Docker
// context, or a Podman connection.
func contextWords(backend, name string) string {
	if backend == engine.BackendPodman {
		return fmt.Sprintf("podman connection %q", name)
	}
	return fmt.Sprintf("docker context %q", name)
}

// imageCheck checks that the image ref is present, pulling it when it is
// missing, as Start would.
func (d *doctor) imageCheck(ctx context.Context, eng engine.Engine, ref string) bool {
	began := time.Now()
	r := checkResult{Check: "image", Image: ref}
	defer func() { r.DurationMS = sinceMS(began); d.report(r) }()
	ictx, cancel := context.WithTimeout(ctx, imageTimeout)
	desc, err := engine.As[engine.Describer](ictx, eng)
	if errors.Is(err, errors.ErrUnsupported) {
		cancel()
		r.Status, r.Detail = statusWarn, ref+": this engine cannot be asked for images; the probe container pulls it when missing"
		return true
	}
	present := false
	if err == nil {
		present, err = desc.HasImage(ictx, ref)
	}
	cancel()
	if err != nil {
		r.Status, r.Detail = statusFail, fmt.Sprintf("looking up image %s: %v", ref, err)
		r.Hint = "the engine answered but could not look the image up; check its logs"
		return false
	}
	if present {
		r.Status, r.Detail = statusOK, ref+" is present"
		return true
	}
	pctx, cancel := context.WithTimeout(ctx, pullTimeout)
	pp := newPullPrinter(d.stderr) // stdout has the checks; the pull's progress goes beside the logs
	pctx = engine.WithPullWatcher(pctx, pp.watch)
	if ens, eerr := engine.As[engine.ImageEnsurer](pctx, eng); eerr == nil {
		err = ens.EnsureImage(pctx, ref)
	} else {
		err = desc.PullImage(pctx, ref)
	}
	pp.end()
	timedOut := pctx.Err() != nil
	cancel()
	if err != nil {
		if timedOut {
			err = fmt.Errorf("no pull within %v: %w", pullTimeout, err)
		}
		r.Status, r.Detail = statusFail, fmt.Sprintf("%s is not present, and pulling it failed: %v", ref, err)
		r.Hint = "without a registry, build it with scripts/provision (it makes localhost/sandbox-python:3.11), " +
			"or set " + config.EnvImage + " to an image the engine has (docker images, podman images)"
		return false
	}
	r.Status, r.Detail = statusOK, ref+" was not present; pulled it"
	return true
}

// runtimeResult checks the OCI runtime the probe container ran under
// against the one asked for (want; "": the engine's default).
func runtimeResult(info engine.Info, want string, p probeOutcome) checkResult {
	r := checkResult{Check: "runtime", DurationMS: p.inspect.Milliseconds(), Runtime: p.runtime}
	wantEff := want
	if wantEff == "" {
		wantEff = info.DefaultOCIRuntime
	}
	r.WantRuntime = wantEff
	asked := fmt.Sprintf("as %s asks", config.EnvOCIRuntime)
	if want == "" {
		asked = fmt.Sprintf("the engine's default (%s unset)", config.EnvOCIRuntime)
	}
	got := p.runtime
	switch {
	case errors.Is(p.runtimeErr, errNoRuntimeReport):
		r.Status, r.Detail = statusWarn, p.runtimeErr.Error()+"; not checked"
	case p.runtimeErr != nil:
		r.Status, r.Detail = statusFail, fmt.Sprintf("asking the probe container's OCI runtime: %v", p.runtimeErr)
		r.Hint = "the engine answered but could not inspect the container; check its logs"
	case got == "":
		r.Status, r.Detail = statusWarn, "the engine does not say which OCI runtime the probe container ran under"
	case wantEff == "" || filepath.Base(got) == filepath.Base(wantEff):
		r.Status, r.Detail = statusOK, fmt.Sprintf("the probe container ran under %s, %s", got, asked)
	case want == "":
		r.Status, r.Detail = statusWarn, fmt.Sprintf("the probe container ran under %s, but the engine's default is %s", got, wantEff)
	default:
		r.Status, r.Detail = statusFail, fmt.Sprintf("the probe container ran under %s, but %s asks for %s", got, config.EnvOCIRuntime, want)
		r.Hint = fmt.Sprintf("register %s with the engine (Docker: \"runtimes\" in daemon.json; Podman: [engine.runtimes] in containers.conf) or unset %s",
			want, config.EnvOCIRuntime)
	}
	return r
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}
