//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// directToolsList returns the tools/list result of a server run directly.
func directToolsList(b testing.TB, command string, args ...string) string {
	b.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-direct", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(command, args...)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := json.Marshal(res)
	return string(raw)
}

// BenchmarkContextTokens is item 5: the tokens of our tools/list with 1, 3
// and 20 configured servers against the servers' own tools/list. A count,
// not a latency: one op is the whole measurement (run it with -benchtime
// 1x), its ns/op only how long that took; the counts are its metrics.
func BenchmarkContextTokens(b *testing.B) {
	sec := report.section("5", "Context cost: tokens of `tools/list`", "what the client loads", "bytes", "cl100k_base", "o200k_base")
	for b.Loop() {
		measureContextTokens(b, sec)
	}
}

func measureContextTokens(b *testing.B, sec *reportSection) {
	servers := []int{1, 3, 20}
	var labels, texts []string
	for _, n := range servers {
		cs := connectBridge(b, "docker", "HOME="+homeWithServers(b, n))
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			b.Fatal(err)
		}
		cs.Close()
		raw, _ := json.Marshal(res)
		labels = append(labels, fmt.Sprintf("this bridge, %d configured servers", n))
		texts = append(texts, string(raw))
	}
	bin := filepath.Join(nodeDir(b), "node_modules", ".bin")
	shared := b.TempDir()
	for _, s := range []struct{ name, cmd, arg string }{
		{"server-everything", "mcp-server-everything", ""},
		{"server-filesystem", "mcp-server-filesystem", shared},
		{"server-memory", "mcp-server-memory", ""},
	} {
		var args []string
		if s.arg != "" {
			args = []string{s.arg}
		}
		labels = append(labels, s.name+" directly")
		texts = append(texts, directToolsList(b, filepath.Join(bin, s.cmd), args...))
	}
	counts := countTokens(b, texts...)
	for i := range texts {
		sec.row(labels[i], labels[i], strconv.Itoa(len(texts[i])), strconv.Itoa(counts[i].CL100K), strconv.Itoa(counts[i].O200K))
	}
	ours := counts[:3]
	d := counts[3:]
	sum3 := tokenCount{d[0].CL100K + d[1].CL100K + d[2].CL100K, d[0].O200K + d[1].O200K + d[2].O200K}
	// The 20 configured servers are the three, 7, 7 and 6 times.
	sum20 := tokenCount{7*d[0].CL100K + 7*d[1].CL100K + 6*d[2].CL100K, 7*d[0].O200K + 7*d[1].O200K + 6*d[2].O200K}
	sec.row("sum3", "the 3 servers directly", "", strconv.Itoa(sum3.CL100K), strconv.Itoa(sum3.O200K))
	sec.row("sum20", "the 20 servers directly (the 3, 7/7/6 times)", "", strconv.Itoa(sum20.CL100K), strconv.Itoa(sum20.O200K))
	for i, n := range servers {
		b.ReportMetric(float64(ours[i].CL100K), fmt.Sprintf("cl100k-tokens-%d-servers", n))
	}
	b.ReportMetric(float64(sum3.CL100K), "cl100k-tokens-3-direct")
	worst := max(ours[0].CL100K, ours[0].O200K)
	constant := ours[0] == ours[1] && ours[1] == ours[2]
	report.headline("tools/list tokens, 1/3/20 servers", "≤ 300, constant",
		fmt.Sprintf("%d/%d/%d (cl100k), %d/%d/%d (o200k)", ours[0].CL100K, ours[1].CL100K, ours[2].CL100K, ours[0].O200K, ours[1].O200K, ours[2].O200K),
		worst <= 300 && constant)
	sec.note("Counted with js-tiktoken (npm, offline ranks) over the JSON of the whole `tools/list` result. With the 3 servers, "+
		"this bridge costs %.1f%% of exposing them directly (cl100k); with 20, %.1f%%.",
		100*float64(ours[1].CL100K)/float64(sum3.CL100K), 100*float64(ours[2].CL100K)/float64(sum20.CL100K))
}

// rssBytes returns the resident set size of process pid.
func rssBytes(b testing.TB, pid int) int64 {
	b.Helper()
	kb, err := strconv.ParseInt(strings.Fields(firstMatch(fmt.Sprintf("/proc/%d/status", pid), "VmRSS"))[0], 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return kb << 10
}

// containerMemory returns the memory of the sandbox of bridge pid as the
// engine's stats report it (usage less inactive file cache, as `docker
// stats` shows it). Podman answers the Docker-compatible stats endpoint.
func containerMemory(b testing.TB, engineName string, pid int) int64 {
	b.Helper()
	owned := containersOf(b, connect(b, engineName), pid)
	if len(owned) == 0 {
		b.Fatalf("no container of bridge %d", pid)
	}
	id := owned[len(owned)-1].ID
	return containerMemoryOf(b, engineName, id)
}

// containerMemoryOf returns the memory of container id as the engine's
// stats report it (see containerMemory).
func containerMemoryOf(b testing.TB, engineName, id string) int64 {
	b.Helper()
	ctx := context.Background()
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if engineName == "podman" {
		host := os.Getenv("CONTAINER_HOST")
		if host == "" {
			host = "unix:///run/podman/podman.sock"
		}
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	res, err := cli.ContainerStatsOneShot(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var st struct {
		MemoryStats struct {
			Usage int64            `json:"usage"`
			Stats map[string]int64 `json:"stats"`
		} `json:"memory_stats"`
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		b.Fatal(err)
	}
	inactive := st.MemoryStats.Stats["total_inactive_file"]
	if v, ok := st.MemoryStats.Stats["inactive_file"]; ok && inactive == 0 {
		inactive = v
	}
	return st.MemoryStats.Usage - inactive
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// workCode is the "after work" load of item 6: allocations, output, and
// proxied calls.
const workCode = "data = [str(i) * 10 for i in range(200000)]\nprint(len(data))\n" +
	"for i in range(50):\n    await mcp_everything.echo(message=str(i))\ndel data"

// BenchmarkMemory is item 6: the bridge's RSS and its sandbox's memory,
// idle and after work, with 1 and with 20 concurrent clients. Not a
// latency: one op is the whole measurement (run it with -benchtime 1x),
// its ns/op only how long that took; the sizes are its metrics.
func BenchmarkMemory(b *testing.B) {
	sec := report.section("6", "Memory: bridge RSS and session container memory (engine stats)",
		"variant", "clients (bridge processes)", "state", "bridge RSS (each, median)", "container (each, median)", "total bridges + containers")
	sec.note("Bridge RSS from /proc/PID/status (VmRSS). Container memory from the engine's stats API " +
		"(`usage` less inactive file cache, as `docker stats` shows it). The proxied server-everything process " +
		"(Node.js) is not counted: it is the same whatever bridge runs it.")
	forEachVariant(b, func(b *testing.B, v variant) {
		if v.oci != "" {
			b.Skip("gVisor's memory is the sentry's, not comparable with runc's cgroup figure")
		}
		home, _ := npmHome(b)
		for b.Loop() {
			measureMemory(b, sec, v, home)
		}
	})
}

// measureMemory is one measurement of item 6 on v; it stops the bridges it
// starts.
func measureMemory(b *testing.B, sec *reportSection, v variant, home string) {
	measure := func(pids []int, state, metric string) {
		time.Sleep(500 * time.Millisecond)
		var rss, mem []int64
		var total int64
		for _, pid := range pids {
			r, m := rssBytes(b, pid), containerMemory(b, v.engine, pid)
			rss, mem = append(rss, r), append(mem, m)
			total += r + m
		}
		sec.row(v.label+"/"+metric, v.label, strconv.Itoa(len(pids)), state, mib(median(rss)), mib(median(mem)), mib(total))
		b.ReportMetric(float64(median(rss))/(1<<20), "bridge-MiB-"+metric)
		b.ReportMetric(float64(median(mem))/(1<<20), "container-MiB-"+metric)
	}
	cs, cmd := connectBridgeCmd(b, v.engine, append(v.env(), "HOME="+home)...)
	timedCall(b, cs, map[string]any{"code": "print(1)"}, "1")
	measure([]int{cmd.Process.Pid}, "idle, after one call", "idle")
	for range 20 {
		timedCall(b, cs, map[string]any{"code": workCode, "servers": []string{"everything"}}, "200000")
	}
	measure([]int{cmd.Process.Pid}, "after 20 calls: 200k-item lists, 1,000 proxied calls", "worked")
	cs.Close()
	cmd.Wait()

	var pids []int
	var stops []func()
	for range 20 {
		cs, cmd := connectBridgeCmd(b, v.engine, append(v.env(), "HOME="+home)...)
		timedCall(b, cs, map[string]any{"code": "print(1)"}, "1")
		pids = append(pids, cmd.Process.Pid)
		stops = append(stops, func() { cs.Close(); cmd.Wait() })
	}
	measure(pids, "idle, after one call each", "idle20")
	for _, stop := range stops {
		stop()
	}
}

func median(v []int64) int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
