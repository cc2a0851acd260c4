package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// probeCommand runs the Python program it reads on stdin.
var probeCommand = []string{"python3", "-u", "-"}

// probeProgram runs in the probe container and reports, as one JSON
// object, what code there can see and do.
const probeProgram = `
import json, os, socket

def attempt(f):
    try:
        f()
        return "ok"
    except BaseException as e:
        return type(e).__name__ + ": " + str(e)

def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None

def first(*paths):
    for p in paths:
        v = read(p)
        if v is not None:
            return p, v
    return "", None

def write_root():
    with open("/.mcp-doctor-probe", "w") as f:
        f.write("x")

def connect():
    socket.create_connection(("1.1.1.1", 53), timeout=2).close()

status = {}
for line in (read("/proc/self/status") or "").splitlines():
    k, _, v = line.partition(":")
    status[k] = v.strip()

interfaces = None
dev = read("/proc/net/dev")
if dev is not None:
    interfaces = sorted(l.split(":", 1)[0].strip() for l in dev.splitlines()[2:] if ":" in l)

mounts = {}
for line in (read("/proc/mounts") or "").splitlines():
    parts = line.split()
    if len(parts) >= 4:
        mounts[parts[1]] = {"type": parts[2], "options": parts[3].split(",")}

mem_path, mem = first("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
pids_path, pids = first("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max")
print(json.dumps({
    "uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(), "egid": os.getegid(),
    "write_root": attempt(write_root),
    "root": mounts.get("/"),
    "tmp": mounts.get("/tmp"),
    "interfaces": interfaces,
    "connect": attempt(connect),
    "cap_eff": status.get("CapEff"),
    "no_new_privs": status.get("NoNewPrivs"),
    "mem_path": mem_path, "mem": mem,
    "pids_path": pids_path, "pids": pids,
}))
`

// A probeReport is what probeProgram printed.
type probeReport struct {
	UID        int         `json:"uid"`
	GID        int         `json:"gid"`
	EUID       int         `json:"euid"`
	EGID       int         `json:"egid"`
	WriteRoot  string      `json:"write_root"`
	Root       *probeMount `json:"root"`
	Tmp        *probeMount `json:"tmp"`
	Interfaces []string    `json:"interfaces"`
	Connect    string      `json:"connect"`
	CapEff     *string     `json:"cap_eff"`
	NoNewPrivs *string     `json:"no_new_privs"`
	MemPath    string      `json:"mem_path"`
	Mem        *string     `json:"mem"`
	PidsPath   string      `json:"pids_path"`
	Pids       *string     `json:"pids"`
}

// A probeMount is a line of /proc/mounts.
type probeMount struct {
	Type    string   `json:"type"`
	Options []string `json:"options"`
}

// A probeProperty is one hardening property as the probe found it, against
// what the settings ask.
type probeProperty struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, fail, warn (not visible from inside)
	Want   string `json:"want"`
	Got    string `json:"got"`
	short  string // how the report's line says it holds
}

// A probeOutcome is what the hardening check learned for the runtime
// check.
type probeOutcome struct {
	started    bool   // the probe container started
	runtime    string // its OCI runtime, as the engine reports it
	runtimeErr error
	inspect    time.Duration // asking the runtime took
}

// errNoRuntimeReport reports an engine whose sandboxes do not tell their
// OCI runtime (engine.OCIRuntimeReporter).
var errNoRuntimeReport = errors.New("this engine's sandboxes do not report their OCI runtime")

// Bounds of what the probe container writes.
const (
	maxProbeStdout = 1 << 20
	maxProbeStderr = 64 << 10
)

// hardeningCheck starts a probe container from spec (the bridge's own,
// from the settings), runs probeProgram in it, holds what it reports
// against cfg, asks the engine which OCI runtime it ran under, and
// removes it.
func (d *doctor) hardeningCheck(ctx context.Context, eng engine.Engine, cfg *config.Config, spec engine.Spec, weakLimits string) probeOutcome {
	began := time.Now()
	r := checkResult{Check: "hardening", Image: spec.WithDefaults().Image}
	defer func() { r.DurationMS = sinceMS(began); d.report(r) }()
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	sb, err := eng.Start(ctx, spec)
	startMS := sinceMS(began)
	r.StartMS = &startMS
	if err != nil {
		r.Status, r.Detail = statusFail, fmt.Sprintf("starting the probe container: %v", err)
		r.Hint = "the settings ask for a container the engine cannot make; see the error, or try `exec -c 'print(1)'` with the same settings"
		if errors.Is(err, context.DeadlineExceeded) {
			r.Detail = fmt.Sprintf("the probe container did not start within %v: %v", probeTimeout, err)
		}
		return probeOutcome{}
	}
	defer func() {
		if err := sb.Close(); err != nil {
			d.log.Warn("removing the probe container", "id", sb.ID(), "err", err)
		}
	}()
	out := probeOutcome{started: true}
	// The OCI runtime, asked while the container exists.
	if rr, ok := sb.(engine.OCIRuntimeReporter); ok {
		t := time.Now()
		ictx, cancel := context.WithTimeout(ctx, inspectTimeout)
		out.runtime, out.runtimeErr = rr.OCIRuntime(ictx)
		cancel()
		out.inspect = time.Since(t)
	} else {
		out.runtimeErr = errNoRuntimeReport
	}
	stdout, stderr, st, err := runProbe(ctx, sb)
	switch {
	case err != nil:
		r.Status, r.Detail = statusFail, fmt.Sprintf("running the probe: %v", err)
		return out
	case st.Code != 0:
		r.Status, r.Detail = statusFail, fmt.Sprintf("the probe exited with %v; its stderr: %s", st, lastLines(stderr, 3))
		r.Hint = "the sandbox image needs python3 on its PATH (" + config.EnvImage + ")"
		return out
	}
	var rep probeReport
	if err := json.Unmarshal(stdout, &rep); err != nil {
		r.Status, r.Detail = statusFail, fmt.Sprintf("reading the probe's report: %v: %q", err, lastLines(stdout, 3))
		return out
	}
	r.Properties = holdProbe(rep, spec.WithDefaults())
	if weakLimits != "" && cfg.Engine.AllowWeakLimits {
		acceptWeakLimits(r.Properties)
	}
	r.Status, r.Detail, r.Hint = summarize(r.Properties, startMS)
	return out
}

// runProbe sends probeProgram to the started sandbox and returns what it
// printed and how it ended.
func runProbe(ctx context.Context, sb engine.Sandbox) (stdout, stderr []byte, st engine.ExitStatus, err error) {
	var out, errb bytes.Buffer
	var wg sync.WaitGroup
	drain := func(w *bytes.Buffer, r io.Reader, limit int64) {
		defer wg.Done()
		io.Copy(w, io.LimitReader(r, limit))
		io.Copy(io.Discard, r)
	}
	wg.Add(2)
	go drain(&out, sb.Stdout(), maxProbeStdout)
	go drain(&errb, sb.Stderr(), maxProbeStderr)
	if _, err := io.WriteString(sb.Stdin(), probeProgram); err != nil {
		return nil, nil, st, fmt.Errorf("sending the probe: %w", err)
	}
	if err := sb.Stdin().Close(); err != nil {
		return nil, nil, st, fmt.Errorf("sending the probe: %w", err)
	}
	st, err = sb.Wait(ctx)
	if err != nil {
		return nil, nil, st, fmt.Errorf("waiting for the probe: %w", err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, nil, st, fmt.Errorf("reading the probe's output: %w", ctx.Err())
	}
	return out.Bytes(), errb.Bytes(), st, nil
}

// holdProbe holds the probe's report against spec, with its defaults
// applied and its limits as the OCI runtime gets them.
func holdProbe(rep probeReport, spec engine.Spec) []probeProperty {
	var props []probeProperty
	add := func(name string, ok bool, want, got, short string) {
		status := statusOK
		if !ok {
			status = statusFail
		}
		props = append(props, probeProperty{Name: name, Status: status, Want: want, Got: got, short: short})
	}

	uid, gid, hasGID := strings.Cut(spec.User, ":")
	got := fmt.Sprintf("%d:%d", rep.UID, rep.GID)
	if rep.EUID != rep.UID || rep.EGID != rep.GID {
		got += fmt.Sprintf(" (effective %d:%d)", rep.EUID, rep.EGID)
	}
	userOK := strconv.Itoa(rep.UID) == uid && rep.EUID == rep.UID && rep.EGID == rep.GID &&
		(!hasGID || strconv.Itoa(rep.GID) == gid)
	add("user", userOK, spec.User, got, "uid:gid "+got)

	rootRO := rep.Root != nil && slices.Contains(rep.Root.Options, "ro")
	got = "write to /: " + rep.WriteRoot
	if rep.Root != nil {
		mode := "rw"
		if rootRO {
			mode = "ro"
		}
		got = "mounted " + mode + "; " + got
	}
	add("read-only root", rootRO && rep.WriteRoot != "ok", "mounted ro, a write to / fails", got, "/ read-only")

	netOK := rep.Connect != "ok" && (rep.Interfaces == nil || slices.Equal(rep.Interfaces, []string{"lo"}))
	got = "connect to 1.1.1.1:53: " + rep.Connect
	if rep.Interfaces != nil {
		got = "interfaces " + strings.Join(rep.Interfaces, ",") + "; " + got
	}
	add("network", netOK, "only lo, a connection out fails", got, "network lo only")

	capEff := deref(rep.CapEff)
	add("capabilities", capEff != "" && strings.Trim(capEff, "0") == "", "CapEff 0", "CapEff "+orUnknown(capEff), "CapEff 0")
	if rep.NoNewPrivs == nil {
		// gVisor's /proc/self/status has no NoNewPrivs line.
		props = append(props, probeProperty{Name: "no new privileges", Status: statusWarn, Want: "NoNewPrivs 1",
			Got: "not visible from inside (no NoNewPrivs in /proc/self/status)"})
	} else {
		add("no new privileges", *rep.NoNewPrivs == "1", "NoNewPrivs 1", "NoNewPrivs "+*rep.NoNewPrivs, "NoNewPrivs 1")
	}

	props = append(props, limitProperty("memory", rep.Mem, rep.MemPath, spec.MemoryBytes, engine.FormatBytes))
	pids, _ := spec.TaskLimits()
	props = append(props, limitProperty("pids", rep.Pids, rep.PidsPath, pids, func(n int64) string { return strconv.FormatInt(n, 10) }))

	// gVisor does not show nosuid and nodev (nothing there honours them).
	tmpOK := rep.Tmp != nil && rep.Tmp.Type == "tmpfs" && slices.Contains(rep.Tmp.Options, "noexec")
	got = "not a mount"
	if rep.Tmp != nil {
		got = rep.Tmp.Type + " " + strings.Join(rep.Tmp.Options, ",")
	}
	add("/tmp noexec", tmpOK, "a noexec tmpfs", got, "/tmp noexec tmpfs")
	return props
}

// acceptWeakLimits makes the limits the engine cannot apply, and the
// operator accepted without (MCP_BRIDGE_ALLOW_WEAK_LIMITS=1), warnings
// instead of failures.
func acceptWeakLimits(props []probeProperty) {
	for i, p := range props {
		if (p.Name == "memory" || p.Name == "pids") && p.Status == statusFail {
			props[i].Status = statusWarn
			props[i].Got += ", want " + p.Want + ": not applied, accepted (MCP_BRIDGE_ALLOW_WEAK_LIMITS=1)"
		}
	}
}

// limitProperty holds a cgroup limit the probe read (nil: no cgroup file
// visible, as under gVisor) against want.
func limitProperty(name string, got *string, path string, want int64, format func(int64) string) probeProperty {
	p := probeProperty{Name: name, Want: format(want)}
	switch {
	case got == nil:
		p.Status, p.Got = statusWarn, "not visible from inside (no cgroup file)"
	default:
		n, err := strconv.ParseInt(*got, 10, 64)
		p.Got = *got + " (" + path + ")"
		if err == nil {
			p.Got = format(n) + " (" + path + ")"
		}
		p.Status = statusFail
		if err == nil && n == want {
			p.Status = statusOK
		}
	}
	p.short = name + " " + p.Want
	return p
}

// summarize returns the status, detail and hint of the hardening check
// from its properties.
func summarize(props []probeProperty, startMS int64) (status, detail, hint string) {
	var ok, fail, warn []string
	for _, p := range props {
		switch p.Status {
		case statusOK:
			ok = append(ok, p.short)
		case statusFail:
			fail = append(fail, fmt.Sprintf("%s: %s, want %s", p.Name, p.Got, p.Want))
		default:
			warn = append(warn, fmt.Sprintf("%s: %s", p.Name, p.Got))
		}
	}
	started := fmt.Sprintf("started in %d ms", startMS)
	switch {
	case len(fail) > 0:
		return statusFail, strings.Join(fail, "; ") + fmt.Sprintf(" (%d other properties hold, %d not visible; %s)", len(ok), len(warn), started),
			"the engine did not apply the sandbox's hardening; check its version and configuration (SECURITY.md)"
	case len(warn) > 0:
		return statusWarn, strings.Join(ok, ", ") + "; " + strings.Join(warn, "; ") + "; " + started,
			"what is not visible from inside (as under gVisor) cannot be checked here; the engine was asked for it"
	}
	return statusOK, strings.Join(ok, ", ") + "; " + started, ""
}

// lastLines returns the last n lines of b, joined by " | ".
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
