//go:build integration

package integration

import (
	"cmp"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// probe is run inside the sandbox and reports what the code there can see
// and do. Every hardening property is asserted on its report.
const probe = `
import json, os, resource, stat, subprocess, sys

def attempt(f):
    try:
        f()
        return "ok"
    except BaseException as e:
        return type(e).__name__ + ": " + str(e)

def status_fields():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out

def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as e:
        return "unreadable: " + str(e)

def first(*paths):
    for p in paths:
        if os.path.exists(p):
            return p, read(p)
    return "", ""

def write(path):
    def f():
        with open(path, "w") as fh:
            fh.write("x")
    return f

def exec_from(d):
    def f():
        p = os.path.join(d, "probe.sh")
        with open(p, "w") as fh:
            fh.write("#!/bin/sh\nexit 0\n")
        os.chmod(p, 0o755)
        subprocess.run([p], check=True)
    return f

def routes(path):
    # The routing table's entries (none: nothing leaves the sandbox), read
    # rather than tried: the probe dials no address.
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        return [str(e)]
    return [l for l in lines[1 if path.endswith("/route") else 0:] if l.strip() and " lo" not in l and "\tlo" not in l and not l.startswith("lo")]

def lane_dir(d):
    # What the fast lane's directory holds (None: it is not there).
    if not os.path.isdir(d):
        return None
    entries = []
    for n in sorted(os.listdir(d)):
        entries.append([n, stat.S_ISSOCK(os.lstat(os.path.join(d, n)).st_mode)])
    return {"entries": entries, "write": attempt(write(d + "/probe"))}

mounts = {}
with open("/proc/mounts") as f:
    for line in f:
        parts = line.split()
        mounts[parts[1]] = {"type": parts[2], "options": parts[3].split(",")}

st = status_fields()
mem_path, mem = first("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
swap_path, swap = first("/sys/fs/cgroup/memory.swap.max", "/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
pids_path, pids = first("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max")
print(json.dumps({
    "uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "egid": os.getegid(),
    "groups": os.getgroups(),
    "NoNewPrivs": st.get("NoNewPrivs"), "CapEff": st.get("CapEff"), "CapPrm": st.get("CapPrm"),
    "CapInh": st.get("CapInh"), "CapAmb": st.get("CapAmb"), "CapBnd": st.get("CapBnd"),
    "routes4": routes("/proc/net/route"),
    "routes6": routes("/proc/net/ipv6_route"),
    "lane": lane_dir("/run/mcp-lane"),
    "interfaces": sorted(os.listdir("/sys/class/net")),
    "write_root": attempt(write("/probe")),
    "write_etc": attempt(write("/etc/probe")),
    "write_tmp": attempt(write("/tmp/probe")),
    "write_workspace": attempt(write("/workspace/probe")),
    "write_out": attempt(write("/workspace/out/probe")),
    "exec_tmp": attempt(exec_from("/tmp")),
    "exec_workspace": attempt(exec_from("/workspace")),
    "exec_out": attempt(exec_from("/workspace/out")),
    "mounts": {k: mounts.get(k) for k in ("/", "/tmp", "/workspace", "/workspace/out", "/run/mcp-lane")},
    "cwd": os.getcwd(),
    "env": dict(os.environ),
    "mem_path": mem_path, "mem": mem, "swap_path": swap_path, "swap": swap,
    "pids_path": pids_path, "pids": pids,
    "nofile": resource.getrlimit(resource.RLIMIT_NOFILE),
    "nproc": resource.getrlimit(resource.RLIMIT_NPROC),
    "pid": os.getpid(),
    "init": read("/proc/1/comm"),
}))
`

type probeReport struct {
	UID, EUID, GID, EGID int
	Groups               []int
	NoNewPrivs           string
	CapEff, CapPrm       string
	CapInh, CapAmb       string
	CapBnd               string
	Routes4              []string
	Routes6              []string
	Lane                 *struct {
		Entries [][2]any
		Write   string
	}
	Interfaces     []string
	WriteRoot      string `json:"write_root"`
	WriteEtc       string `json:"write_etc"`
	WriteTmp       string `json:"write_tmp"`
	WriteWorkspace string `json:"write_workspace"`
	WriteOut       string `json:"write_out"`
	ExecTmp        string `json:"exec_tmp"`
	ExecWorkspace  string `json:"exec_workspace"`
	ExecOut        string `json:"exec_out"`
	Mounts         map[string]*struct {
		Type    string
		Options []string
	}
	Cwd      string
	Env      map[string]string
	MemPath  string `json:"mem_path"`
	Mem      string
	SwapPath string `json:"swap_path"`
	Swap     string
	PidsPath string `json:"pids_path"`
	Pids     string
	NoFile   [2]uint64
	NProc    [2]uint64
	PID      int
	Init     string
}

const hostCanary = "MCP_TEST_HOST_CANARY"

func TestHardeningFromInside(t *testing.T) {
	// A variable of the host's environment that must not reach the sandbox.
	t.Setenv(hostCanary, "host-secret")
	forEachEngine(t, func(t *testing.T, e testEngine) {
		checkHardening(t, e, "")
		// With the fast lane (MCP_BRIDGE_FAST_LANE), one directory is
		// mounted from the host: read-only, holding one socket.
		checkHardening(t, e, laneDir(t))
	})
}

// laneDir makes a fast lane's directory as entrypoint.Lanes makes it:
// mode 0755 in a 0700 directory of the bridge's user, holding one socket
// of mode 0666, which listens until the test ends.
func laneDir(t *testing.T) string {
	parent := filepath.Join(t.TempDir(), "lanes")
	dir := filepath.Join(parent, "sb-1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(parent, 0o700)
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	os.Chmod(filepath.Join(dir, "sock"), 0o666)
	return dir
}

// checkHardening runs the probe in a sandbox on e, with lane as its
// fast lane's directory ("": none), and asserts every hardening property
// on its report. The caller sets hostCanary in the environment, which
// must not reach the sandbox.
func checkHardening(t *testing.T, e testEngine, lane string) {
	spec := pySpec(t, "hardening")
	spec.MemoryBytes = 96 << 20
	spec.PidsLimit = 48
	spec.Lane = lane
	var r probeReport
	runJSON(t, e, spec, probe, &r)
	checkLane(t, e, lane, &r)

	check := func(name string, ok bool, got any) {
		t.Helper()
		if !ok {
			t.Errorf("%s: got %v", name, got)
		}
	}
	check("uid/euid 65534", r.UID == 65534 && r.EUID == 65534, []int{r.UID, r.EUID})
	check("gid/egid 65534", r.GID == 65534 && r.EGID == 65534, []int{r.GID, r.EGID})
	check("no supplementary groups but 65534", len(r.Groups) == 0 || slices.Equal(r.Groups, []int{65534}), r.Groups)
	check("NoNewPrivs: 1", r.NoNewPrivs == "1", r.NoNewPrivs)
	for name, v := range map[string]string{"CapEff": r.CapEff, "CapPrm": r.CapPrm, "CapInh": r.CapInh, "CapAmb": r.CapAmb, "CapBnd": r.CapBnd} {
		check(name+" all zero", strings.Trim(v, "0") == "" && v != "", v)
	}
	check("no route but loopback (IPv4)", len(r.Routes4) == 0, r.Routes4)
	check("no route but loopback (IPv6)", len(r.Routes6) == 0, r.Routes6)
	check("only loopback interface", slices.Equal(r.Interfaces, []string{"lo"}), r.Interfaces)
	check("rootfs not writable (/)", strings.Contains(r.WriteRoot, "Read-only file system") || strings.Contains(r.WriteRoot, "Permission denied"), r.WriteRoot)
	check("rootfs not writable (/etc)", strings.Contains(r.WriteEtc, "Read-only file system") || strings.Contains(r.WriteEtc, "Permission denied"), r.WriteEtc)
	check("rootfs mounted read-only", r.Mounts["/"] != nil && slices.Contains(r.Mounts["/"].Options, "ro"), r.Mounts["/"])
	check("/tmp writable", r.WriteTmp == "ok", r.WriteTmp)
	check("/workspace writable", r.WriteWorkspace == "ok", r.WriteWorkspace)
	check("/tmp not executable", strings.Contains(r.ExecTmp, "PermissionError"), r.ExecTmp)
	check("/workspace not executable", strings.Contains(r.ExecWorkspace, "PermissionError"), r.ExecWorkspace)
	check(engine.OutDir+" writable", r.WriteOut == "ok", r.WriteOut)
	check(engine.OutDir+" not executable", strings.Contains(r.ExecOut, "PermissionError"), r.ExecOut)
	outSize := "size=" + strconv.FormatInt(cmp.Or(spec.OutBytes, 64<<20)>>10, 10) + "k"
	check(engine.OutDir+" "+outSize, r.Mounts[engine.OutDir] != nil && slices.Contains(r.Mounts[engine.OutDir].Options, outSize), r.Mounts[engine.OutDir])
	for _, m := range []string{"/tmp", "/workspace", engine.OutDir} {
		mt := r.Mounts[m]
		ok := mt != nil && mt.Type == "tmpfs"
		for _, o := range []string{"rw", "noexec", "nosuid", "nodev"} {
			ok = ok && slices.Contains(mt.Options, o)
		}
		check(m+" is tmpfs rw,noexec,nosuid,nodev", ok, mt)
	}
	check("workdir /workspace", r.Cwd == "/workspace", r.Cwd)
	for k, v := range map[string]string{"HOME": "/workspace", "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1"} {
		check("env "+k, r.Env[k] == v, r.Env[k])
	}
	// The engine adds PATH and HOSTNAME (and podman "container");
	// Python itself sets LC_CTYPE when it coerces the C locale (PEP
	// 538); the image's own ENV (the operator's choice, such as
	// LANG) is kept at the image's value. Nothing may come from the
	// host's environment.
	allowed := map[string]bool{"HOME": true, "PYTHONUNBUFFERED": true, "PYTHONIOENCODING": true,
		"PYTHONDONTWRITEBYTECODE": true, "PATH": true, "HOSTNAME": true, "container": true, "TERM": true,
		"LC_CTYPE": true}
	imageEnv := imageEnv(t, e.Name(), spec.Image)
	for k, v := range r.Env {
		fromImage, ok := imageEnv[k]
		check("env has only sandbox and image variables ("+k+")", allowed[k] || ok && fromImage == v, v)
	}
	check("host canary absent", r.Env[hostCanary] == "", r.Env[hostCanary])
	check("memory limit in cgroup ("+r.MemPath+")", r.Mem == "100663296", r.Mem)
	check("no swap beyond memory ("+r.SwapPath+")", r.Swap == "0" || r.Swap == "100663296", r.Swap)
	check("pids limit in cgroup ("+r.PidsPath+")", r.Pids == "48", r.Pids)
	check("nofile rlimit set", r.NoFile[0] == spec.NoFile && r.NoFile[1] == spec.NoFile, r.NoFile)
	check("nproc rlimit set", r.NProc[0] == spec.NProc && r.NProc[1] == spec.NProc, r.NProc)
	check("an init process is PID 1", r.PID != 1 && r.Init != "python3", []any{r.PID, r.Init})
	t.Logf("%s: init=%q cgroup mem=%s pids=%s", e.Name(), r.Init, r.MemPath, r.PidsPath)
}

// checkLane asserts what the probe found at engine.LaneDir: nothing
// without a lane; with one, a read-only mount (nosuid, nodev and noexec
// where the engine takes them: Podman) of one directory holding one
// socket.
func checkLane(t *testing.T, e testEngine, lane string, r *probeReport) {
	t.Helper()
	m := r.Mounts[engine.LaneDir]
	if lane == "" {
		if m != nil || r.Lane != nil {
			t.Errorf("without a lane, %s is there: mount %+v, holding %+v", engine.LaneDir, m, r.Lane)
		}
		return
	}
	want := []string{"ro"}
	if e.Name() == "podman" {
		want = append(want, "nosuid", "nodev", "noexec")
	}
	for _, o := range want {
		if m == nil || !slices.Contains(m.Options, o) {
			t.Errorf("the lane's mount %+v lacks %s", m, o)
		}
	}
	if r.Lane == nil || len(r.Lane.Entries) != 1 || r.Lane.Entries[0][0] != "sock" || r.Lane.Entries[0][1] != true {
		t.Errorf("the lane's directory holds %+v, want one socket, sock", r.Lane)
	}
	if r.Lane != nil && !strings.Contains(r.Lane.Write, "Read-only file system") {
		t.Errorf("writing in the lane's directory: %s", r.Lane.Write)
	}
}

// imageEnv returns the variables image declares (its ENV), read with the
// engine's CLI.
func imageEnv(t *testing.T, engineName, image string) map[string]string {
	t.Helper()
	out, err := exec.Command(engineName, "image", "inspect", "--format", "{{json .Config.Env}}", image).Output()
	if err != nil {
		t.Fatalf("%s image inspect %s: %v", engineName, image, err)
	}
	var kvs []string
	if err := json.Unmarshal(out, &kvs); err != nil {
		t.Fatalf("%s image inspect %s: %v: %s", engineName, image, err, out)
	}
	env := map[string]string{}
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}
