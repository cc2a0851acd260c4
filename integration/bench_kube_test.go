//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// The benchmarks of item 18: sandboxes as pods (MCP_BRIDGE_RUNTIME=kubernetes)
// against Docker's containers, measured in the same op so that the ratios
// compare like with like on a loaded machine: each op makes one sample of
// every target in turn. They run when MCP_TEST_KUBERNETES=1 is set with the
// exports of `scripts/provision --kubernetes` (as the Kubernetes tests do),
// and are skipped elsewhere; the section then says so.

// A kubeTarget is one of the sandboxes item 18 compares: Docker's container
// (under runc, and under gVisor when runsc is installed), or a pod under the
// node's default RuntimeClass (runc) or gVisor's.
type kubeTarget struct {
	label string
	// metric names the target in the benchmark's metrics.
	metric string
	// base is the label of the Docker target a pod is compared with: the
	// same OCI runtime ("" for Docker's own targets).
	base string
	// engine is the backend's name, env the bridge environment selecting
	// the target (no pool: a start is what item 18 measures).
	engine string
	env    []string
	pod    bool
}

// kubeTargets returns Docker under runc, Docker under gVisor when runsc is
// installed (MCP_BENCH_RUNSC=0 leaves it out), and pods under runc and
// gVisor. Docker must be among MCP_TEST_ENGINES.
func kubeTargets(b *testing.B) []kubeTarget {
	if os.Getenv("MCP_TEST_KUBERNETES") != "1" {
		report.section("18", kubeTitle).note("Not measured in this run: MCP_TEST_KUBERNETES is not 1 " +
			"(`scripts/bench --kubernetes` sets it after `scripts/provision --kubernetes`).")
		b.Skip("MCP_TEST_KUBERNETES is not 1 (scripts/bench --kubernetes sets it after scripts/provision --kubernetes)")
	}
	if os.Getenv("KUBECONFIG") == "" {
		b.Fatal("MCP_TEST_KUBERNETES=1 without KUBECONFIG: eval the exports of scripts/provision --kubernetes")
	}
	if !slices.Contains(engineNames(), "docker") {
		report.section("18", kubeTitle).note("Not measured in this run: item 18 compares pods with Docker's containers, " +
			"and MCP_TEST_ENGINES does not list docker.")
		b.Skip("item 18 compares pods with Docker's containers: MCP_TEST_ENGINES does not list docker")
	}
	noPool := "MCP_BRIDGE_POOL_SIZE=0"
	out := []kubeTarget{{label: "docker", metric: "docker", engine: "docker", env: []string{"MCP_BRIDGE_RUNTIME=docker", noPool}}}
	gvisorBase := "docker"
	if _, err := exec.LookPath("runsc"); err == nil && os.Getenv("MCP_BENCH_RUNSC") != "0" {
		out = append(out, kubeTarget{label: "docker+runsc", metric: "docker+runsc", engine: "docker",
			env: []string{"MCP_BRIDGE_RUNTIME=docker", "MCP_BRIDGE_OCI_RUNTIME=runsc", noPool}})
		gvisorBase = "docker+runsc"
	}
	for _, kv := range kubeVariants() {
		class := kv.class
		t := kubeTarget{label: "pod (runc)", metric: "pod-runc", base: "docker", engine: engine.BackendKubernetes, pod: true,
			env: []string{"MCP_BRIDGE_RUNTIME=" + engine.BackendKubernetes, "MCP_BRIDGE_K8S_RUNTIME_CLASS=" + class, noPool}}
		if class != "" {
			t.label, t.metric, t.base = "pod ("+class+")", "pod-"+class, gvisorBase
		}
		out = append(out, t)
	}
	kubeEngine(b) // connected before timing
	binary(b)
	return out
}

const kubeTitle = "Kubernetes pods: a new sandbox, a warm call over attach, an idle session's memory, against Docker"

// kubeResult is what item 18's benchmarks measured on one target; the
// section's row is rebuilt from it as each benchmark ends.
type kubeResult struct {
	first, warm stats
	mem         []int64 // idle sandboxes' memory, bytes
}

var (
	kubeMu      sync.Mutex
	kubeResults = map[string]*kubeResult{}
)

// kubeRecord updates target t's result with set and rewrites the rows of
// item 18.
func kubeRecord(targets []kubeTarget, t kubeTarget, set func(r *kubeResult)) {
	kubeMu.Lock()
	defer kubeMu.Unlock()
	r := kubeResults[t.label]
	if r == nil {
		r = &kubeResult{}
		kubeResults[t.label] = r
	}
	set(r)
	sec := kubeSection()
	for _, t := range targets {
		r := kubeResults[t.label]
		if r == nil {
			continue
		}
		row := []string{t.label}
		// ratio formats a pod's figure over its Docker base's.
		ratio := func(baseLabel string, v func(r *kubeResult) (float64, bool)) string {
			if !t.pod {
				return ""
			}
			base := kubeResults[baseLabel]
			if base == nil {
				return "n/a"
			}
			bv, ok := v(base)
			if !ok {
				return "n/a"
			}
			rv, _ := v(r)
			return fmt.Sprintf("%.2f× %s", rv/bv, baseLabel)
		}
		if r.first.n > 0 {
			row = append(row, strconv.Itoa(r.first.n), ms(r.first.p50), ms(r.first.p95),
				ratio(t.base, func(r *kubeResult) (float64, bool) { return float64(r.first.p50), r.first.n > 0 }))
		} else {
			row = append(row, "—", "—", "—", "—")
		}
		if r.warm.n > 0 {
			row = append(row, strconv.Itoa(r.warm.n), ms(r.warm.p50), ms(r.warm.p95),
				ratio(t.base, func(r *kubeResult) (float64, bool) { return float64(r.warm.p50), r.warm.n > 0 }))
		} else {
			row = append(row, "—", "—", "—", "—")
		}
		if len(r.mem) > 0 {
			// Memory against Docker under runc: Docker under gVisor is
			// not measured (item 6).
			row = append(row, fmt.Sprintf("%s (%s–%s)", mib(median(r.mem)), mib(slices.Min(r.mem)), mib(slices.Max(r.mem))),
				ratio("docker", func(r *kubeResult) (float64, bool) {
					if len(r.mem) == 0 {
						return 0, false
					}
					return float64(median(r.mem)), true
				}))
		} else {
			row = append(row, "—", "—")
		}
		sec.row(t.label, row...)
	}
}

func kubeSection() *reportSection {
	return report.section("18", kubeTitle,
		"sandbox", "new sandbox: sessions", "first call p50", "p95", "÷ Docker (p50)",
		"warm call: calls", "p50", "p95", "÷ Docker (p50)",
		"idle session's memory, median (min–max)", "÷ Docker")
}

// BenchmarkKubeNewSession is item 18's new sandbox: the first run_python
// of a new stdio client with no pool, its sandbox a pod (create, scheduled,
// started, attached, the runtime and sandbox API) or Docker's container.
// One op is one new session on every target in turn; each bridge's start
// before its call, and its stop after (sandbox removed, the pod's object
// gone), run with the timer stopped.
func BenchmarkKubeNewSession(b *testing.B) {
	targets := kubeTargets(b)
	sec := kubeSection()
	firsts := map[string][]time.Duration{}
	phases := map[string]map[string][]time.Duration{}
	for b.Loop() {
		for _, t := range targets {
			b.StopTimer()
			var log lockedBuffer
			cs, cmd, _ := launchBridge(b, append(slices.Clone(t.env), "MCP_BRIDGE_LOG_LEVEL=INFO"), &log, nil)
			b.StartTimer()
			first := timedCall(b, cs, map[string]any{"code": "print(1)"}, "1")
			b.StopTimer()
			firsts[t.label] = append(firsts[t.label], first)
			pid := cmd.Process.Pid
			cs.Close()
			cmd.Wait()
			if t.pod {
				kubeWaitGone(b, pid)
			}
			got := loggedPhases(log.String())
			if got == nil {
				b.Fatalf("no \"sandbox started\" line in the bridge's log:\n%s", log.String())
			}
			if phases[t.label] == nil {
				phases[t.label] = map[string][]time.Duration{}
			}
			for k, d := range got {
				phases[t.label][k] = append(phases[t.label][k], d)
			}
			b.StartTimer()
		}
	}
	var phaseNotes []string
	for _, t := range targets {
		st := summarize(firsts[t.label])
		b.ReportMetric(float64(st.p50)/float64(time.Millisecond), "p50-ms-"+t.metric)
		kubeRecord(targets, t, func(r *kubeResult) { r.first = st })
		var ps []string
		for _, p := range startPhases {
			// A phase a pod's start does not have (no image lookup, the
			// container started by the kubelet) is logged as about 0.
			if ds := phases[t.label][p]; len(ds) > 0 && summarize(ds).p50 >= 5*time.Microsecond {
				ps = append(ps, fmt.Sprintf("`%s` %s", p, ms(summarize(ds).p50)))
			}
		}
		phaseNotes = append(phaseNotes, t.label+": "+strings.Join(ps, ", "))
	}
	sec.note("**New sandbox**: the first `run_python` `print(1)` of a new stdio client, `MCP_BRIDGE_POOL_SIZE=0`, image on the node; " +
		"the targets take turns, one session each per op, each bridge stopped (its sandbox removed; a pod's API object gone) before the next. " +
		"On pods the sandbox is a pod created through the API server, scheduled, started by the kubelet (containerd) and attached " +
		"(`attach` includes waiting for the container to run, watched through the API server).")
	sec.note("Phases of the new sandbox (p50 of each, from the bridge's `sandbox started` line, as in item 4): %s.", strings.Join(phaseNotes, "; "))
}

// kubeWaitGone waits, outside the timer, until the pods of bridge pid are
// gone from the API server, so the next start does not share the node
// with a pod still being deleted by its bridge.
func kubeWaitGone(b *testing.B, pid int) {
	e := kubeEngine(b)
	deadline := time.Now().Add(time.Minute)
	for len(containersOf(b, e, pid)) > 0 {
		if time.Now().After(deadline) {
			b.Fatalf("the pod of bridge %d still exists a minute after its bridge ended", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// BenchmarkKubeWarmCall is item 18's warm call: run_python print(1) on a
// client whose sandbox is a pod (its streams over the API server's
// attach, exec frames and answers through it) or Docker's container. One
// op is one call on every target in turn, after 20 warm-up calls each.
func BenchmarkKubeWarmCall(b *testing.B) {
	targets := kubeTargets(b)
	sec := kubeSection()
	clients := make([]*mcp.ClientSession, len(targets))
	for i, t := range targets {
		clients[i], _, _ = launchBridge(b, append(slices.Clone(t.env), "MCP_BRIDGE_LOG_LEVEL=WARN"), nil, nil)
	}
	args := map[string]any{"code": "print(1)"}
	for range 20 {
		for _, cs := range clients {
			timedCall(b, cs, args, "1")
		}
	}
	samples := map[string][]time.Duration{}
	for b.Loop() {
		for i, t := range targets {
			samples[t.label] = append(samples[t.label], timedCall(b, clients[i], args, "1"))
		}
	}
	for _, t := range targets {
		st := summarize(samples[t.label])
		b.ReportMetric(float64(st.p50)/float64(time.Millisecond), "p50-ms-"+t.metric)
		kubeRecord(targets, t, func(r *kubeResult) { r.warm = st })
	}
	sec.note("**Warm call**: `run_python` `print(1)` over stdio, one client per target, after 20 warm-up calls each; " +
		"the targets take turns call by call. A pod's streams go bridge → API server → kubelet → containerd (attach, " +
		"SPDY/WebSocket), a Docker container's bridge → dockerd's socket.")
}

// kubeIdleSessions is how many idle sessions BenchmarkKubeMemory holds at
// once on each target.
const kubeIdleSessions = 10

// BenchmarkKubeMemory is item 18's memory: kubeIdleSessions stdio clients
// at once on each target, each idle after one call, and the memory of
// each one's sandbox on the node. Not a latency: one op is the whole
// measurement (run it with -benchtime 1x); the sizes are its metrics.
func BenchmarkKubeMemory(b *testing.B) {
	targets := kubeTargets(b)
	sec := kubeSection()
	var cs *kubernetes.Clientset
	for b.Loop() {
		for _, t := range targets {
			if t.label == "docker+runsc" {
				continue // gVisor's memory under Docker: see item 6
			}
			var stops []func()
			var pids []int
			for range kubeIdleSessions {
				c, cmd, _ := launchBridge(b, append(slices.Clone(t.env), "MCP_BRIDGE_LOG_LEVEL=WARN"), nil, nil)
				timedCall(b, c, map[string]any{"code": "print(1)"}, "1")
				pids = append(pids, cmd.Process.Pid)
				stops = append(stops, func() {
					c.Close()
					cmd.Wait()
					if t.pod {
						kubeWaitGone(b, cmd.Process.Pid)
					}
				})
			}
			time.Sleep(2 * time.Second)
			var mem []int64
			for _, pid := range pids {
				if !t.pod {
					mem = append(mem, containerMemory(b, t.engine, pid))
					continue
				}
				if cs == nil {
					cs = kubeClientset(b)
				}
				mem = append(mem, podMemory(b, cs, pid))
			}
			for _, stop := range stops {
				stop()
			}
			b.ReportMetric(float64(median(mem))/(1<<20), "MiB-"+t.metric)
			kubeRecord(targets, t, func(r *kubeResult) { r.mem = mem })
		}
	}
	sec.note("**Memory**: %d stdio clients at once per target, each after one `print(1)`, idle 2 s; each sandbox's memory is "+
		"`usage` less inactive file cache, as `docker stats` shows it: for Docker the engine's stats API (item 6), for a pod its "+
		"cgroup on the node (this machine), the pod's whole cgroup (the sandbox container and the pod's pause container; "+
		"under gVisor the Sentry and the gofer as well, what the node spends on the sandbox). Docker under gVisor is "+
		"left out, as in item 6.", kubeIdleSessions)
}

// kubeClientset returns a client of the cluster of KUBECONFIG.
func kubeClientset(b *testing.B) *kubernetes.Clientset {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		b.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// podMemory returns the memory of the sandbox pod of bridge pid, read from
// the pod's cgroup on this machine (the node): usage less inactive file
// cache.
func podMemory(b *testing.B, cs *kubernetes.Clientset, pid int) int64 {
	b.Helper()
	owned := containersOf(b, kubeEngine(b), pid)
	if len(owned) != 1 {
		b.Fatalf("bridge %d owns %d pods, want 1", pid, len(owned))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := cs.CoreV1().Pods(os.Getenv("MCP_BRIDGE_K8S_NAMESPACE")).Get(ctx, owned[0].ID, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	dir, err := podCgroup(string(p.UID))
	if err != nil {
		b.Skipf("the memory of pod %s: %v (the node must be this machine)", p.Name, err)
	}
	return cgroupMemory(b, dir)
}

// podCgroup finds the memory cgroup of the pod whose UID is uid under the
// kubelet's kubepods hierarchy, cgroup v1 or v2, cgroupfs or systemd
// driver (pod<uid> or kubepods-…-pod<uid with _>.slice).
func podCgroup(uid string) (string, error) {
	names := []string{"pod" + uid, "pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"}
	for _, root := range []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup"} {
		var found string
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			if rel != "." && !strings.HasPrefix(rel, "kubepods") {
				return filepath.SkipDir
			}
			if strings.Count(rel, "/") > 3 {
				return filepath.SkipDir
			}
			for _, n := range names {
				if strings.HasSuffix(d.Name(), n) {
					found = path
					return filepath.SkipAll
				}
			}
			return nil
		})
		if found != "" {
			return found, nil
		}
	}
	return "", errors.New("no kubepods cgroup of pod " + uid + " on this machine")
}

// cgroupMemory returns a memory cgroup's usage less its inactive file
// cache (v1: memory.usage_in_bytes and total_inactive_file; v2:
// memory.current and inactive_file).
func cgroupMemory(b *testing.B, dir string) int64 {
	b.Helper()
	usageFile, inactiveKey := "memory.usage_in_bytes", "total_inactive_file"
	if _, err := os.Stat(filepath.Join(dir, usageFile)); err != nil {
		usageFile, inactiveKey = "memory.current", "inactive_file"
	}
	raw, err := os.ReadFile(filepath.Join(dir, usageFile))
	if err != nil {
		b.Fatal(err)
	}
	usage, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	stat, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(stat), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == inactiveKey {
			n, _ := strconv.ParseInt(v, 10, 64)
			return usage - n
		}
	}
	return usage
}
