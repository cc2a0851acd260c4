//go:build integration

package integration

import (
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// report collects the tables of one benchmark run.
var report = &benchReport{sections: map[string]*reportSection{}, warm: map[string]time.Duration{}}

// A benchReport is the content of BENCHMARKS.md.
type benchReport struct {
	mu        sync.Mutex
	sections  map[string]*reportSection
	headlines [][]string
	// warm is the warm-call p50 per variant, the base of the ratios.
	warm map[string]time.Duration
}

// A reportSection is one measured item: a table and notes.
type reportSection struct {
	key, title string
	header     []string
	rows       [][]string
	rowKeys    []string
	notes      []string
}

// section returns the section key, creating it with title and header.
func (r *benchReport) section(key, title string, header ...string) *reportSection {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sections[key]
	if !ok {
		s = &reportSection{key: key, title: title, header: header}
		r.sections[key] = s
	}
	return s
}

// row sets the table row key: a later run of the same benchmark (a b.N
// benchmark runs once per b.N it tries; -count) replaces its row in place.
func (s *reportSection) row(key string, cells ...string) {
	report.mu.Lock()
	defer report.mu.Unlock()
	if i := slices.Index(s.rowKeys, key); i >= 0 {
		s.rows[i] = cells
		return
	}
	s.rowKeys = append(s.rowKeys, key)
	s.rows = append(s.rows, cells)
}

// note adds a paragraph under the table, once.
func (s *reportSection) note(format string, args ...any) {
	report.mu.Lock()
	defer report.mu.Unlock()
	if n := fmt.Sprintf(format, args...); !slices.Contains(s.notes, n) {
		s.notes = append(s.notes, n)
	}
}

// headline records a goal and what was measured against it; a later
// measurement of the same thing replaces it.
func (r *benchReport) headline(what, goal, measured string, met bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	verdict := "met"
	if !met {
		verdict = "**missed**"
	}
	h := []string{what, goal, measured, verdict}
	if i := slices.IndexFunc(r.headlines, func(h []string) bool { return h[0] == what }); i >= 0 {
		r.headlines[i] = h
		return
	}
	r.headlines = append(r.headlines, h)
}

func (r *benchReport) setWarm(v string, p50 time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warm[v] = p50
}

func (r *benchReport) warmP50(v string) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.warm[v]
	return d, ok
}

// markdown renders the report.
func (r *benchReport) markdown() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b bytes.Buffer
	b.WriteString("# Benchmarks\n\n")
	b.WriteString("Written by `scripts/bench`: the Go benchmarks of `integration/bench*_test.go`, each run for a fixed\n" +
		"number of iterations (`go test -tags integration -bench … -args -benchplan PLAN`, below), one sample per\n" +
		"iteration, so a table's count is its benchmark's b.N. Every figure below comes from ONE `go test` process\n" +
		"on ONE machine, so the ratios compare like with like. Goals are targets reported against, not test assertions.\n\n")
	if *benchPlan != "" {
		fmt.Fprintf(&b, "Iterations (`-benchplan`, PATTERN=BENCHTIME): `%s`.\n\n", strings.Join(strings.Fields(*benchPlan), " "))
	} else if f := flag.Lookup("test.benchtime"); f != nil {
		fmt.Fprintf(&b, "Iterations: `-benchtime %s`.\n\n", f.Value)
	}
	b.WriteString("## Machine\n\n")
	for _, kv := range machine() {
		fmt.Fprintf(&b, "- %s: %s\n", kv[0], kv[1])
	}
	if len(r.headlines) > 0 {
		b.WriteString("\n## Goals\n\n")
		table(&b, []string{"what", "goal", "measured", "verdict"}, r.headlines)
	}
	keys := make([]string, 0, len(r.sections))
	for k := range r.sections {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	for _, k := range keys {
		s := r.sections[k]
		fmt.Fprintf(&b, "\n## %s. %s\n\n", s.key, s.title)
		if len(s.rows) > 0 {
			table(&b, s.header, s.rows)
		}
		for _, n := range s.notes {
			fmt.Fprintf(&b, "\n%s\n", n)
		}
	}
	if *searchReport != "" {
		raw, err := os.ReadFile(*searchReport)
		if err != nil {
			fmt.Fprintf(&b, "\n## 13. Tool search\n\nnot measured: %v\n", err)
		} else {
			b.WriteString("\n")
			b.Write(bytes.TrimSpace(raw))
			b.WriteString("\n")
		}
	}
	b.WriteString(findings)
	return b.String()
}

// findings is what profiling the benchmarks found, kept with the report.
const findings = `
## Findings

- **Podman's first session was 0.55 s, now about as fast as Docker's.** The phase trace (item 4) showed
  0.40 s in ` + "`connect`" + `: the backend logged the service's version with ` + "`system.Version`" + `, which
  Podman 4.3 answers by querying conmon and every OCI runtime. It now logs the API version the
  connection's ping already returned (measured 2026-11-22: 554 ms → 157 ms p50).
- **Where a new session goes** (item 4): on Docker most of it is ` + "`start`" + ` (runc creating the
  container); on Podman the same work shows under ` + "`attach`" + `, which initializes the container before
  the start. ` + "`runtime`" + ` (about 50 ms) is Python importing asyncio and the runtime's modules and
  compiling the runtime; the image is read-only and ` + "`PYTHONDONTWRITEBYTECODE`" + ` is set, so nothing is cached
  between containers. The warm pool hides all of it (item 12a); none is used here, by design of the measurement.
- **Where the warm call goes** (item 1c, interleaved call by call): the engine's attach path alone, a line
  echoed by a bare loop in the same image, is 0.4 to 0.5 ms (Docker and Podman) and 1.1 to 1.3 ms under gVisor: the floor
  of any call. ` + "`Session.Execute`" + ` adds 0.5 to 0.6 ms: the runtime's work per call (stdio checks, the
  ` + "`/workspace/out`" + ` snapshots, compiling, the ` + "`started`" + ` frame, the scan for leftover processes; each
  10 to 80 µs here, where dockerd, containerd-shim and the bridge share two cores with the interpreter). The
  bridge in process adds 0.55 to 0.9 ms: 0.3 to 0.35 ms in the go-sdk's two hops (client → handler, handler →
  client), 60 µs of the bridge's own call path, the rest the session's ` + "`Run`" + ` under that load. The
  process hop over stdio adds 0.3 to 0.5 ms. The go-sdk allocates about 390 KB per call (its internal
  ` + "`json.Unmarshal`" + ` makes a new segmentio ` + "`Decoder`" + ` with its own buffer per message): GC pressure,
  not latency (GOGC=400 made no difference in an A/B).
  The fixed parts alone, measured in the same run (attach path, the go-sdk's two hops, the process hop),
  come to about 1.0 ms in this run (1.2 to 1.3 ms in busier runs the same day): the warm call's ≤ 1.0 ms
  goal is at or below their floor here, whatever the runtime does; under gVisor the attach path alone is
  1.1 to 1.3 ms and Python's system calls cost
  the rest of the 9 ms.
- **The runtime's hand-off** (2026-11-23): the reader thread read each host frame into a fresh 1 MiB bytes
  object (an mmap, mremap and munmap per frame, seen with strace), and 140 to 200 µs passed between reading
  an exec frame and the main thread starting it; reading 64 KiB at a time brought that to 30 to 80 µs. With
  the end of a call written at once (last output, progress and result in one write) and the output pumps
  waiting 1 ms so a short call's output travels with its result, an A/B alternated twice (Docker, p50)
  measured the warm call 2.10 and 1.90 ms before, 1.93 and 1.53 ms after, and ` + "`Execute(\"print(1)\")`" + `
  1.39 to 1.50 ms before, 1.10 to 1.20 ms after. The pump's wait is why print → progress (item 9) is about
  1 ms longer than before.
- **A proxied call** (item 3), timed inside the bridge and the sandbox (2026-11-23, Docker, p50, server-everything
  ` + "`echo`" + `): the sandbox's RPC round trip alone (` + "`list_servers`" + `, answered at once) is about 0.4 ms;
  the bridge's handler of a ` + "`call_tool`" + ` takes 0.76 to 0.87 ms, of which the go-sdk client's ` + "`CallTool`" + `
  to the server 0.46 to 0.63 ms (the direct call measures 0.43 ms) and two lookups of the server's
  configuration about 60 µs each (each stats every configuration location and lists the globbed
  directories, so that an edit is seen at once; a call now looks once: 1.62 and 1.80 ms before, 1.46 and
  1.58 ms after, alternated twice); the generated proxy (` + "`mcp_everything.echo`" + `) and
  ` + "`runtime.call_tool`" + ` measure the same within the noise (1.4 to 1.9 ms in the sandbox). The ≤ 2× goal is at the floor here: the direct call
  plus the attach path's round trip is already 0.43 + 0.44 ms, 2.0× the direct call.
- **UTCP code-mode** (item 8) creates a V8 isolate for every ` + "`callToolChain`" + ` (about 10 ms of its
  11 to 14 ms per chain, measured by its peer script); its two MCP calls cost about 1.8 ms.
- **gVisor** costs every system call a trip through its Sentry: the warm call is 3 to 5 times as long and a
  new session about three times (Python's imports are file-system heavy). A fresh ` + "`docker run`" + `
  under runsc is also slower, so the ratio to the warm call stays large but under 200×.
- **Machines of the same kind differ; compare within one report.** Two runs on 2026-11-22, on two VMs of
  the same size (kernel builds v595 at 14:48 and v769 at 22:03), gave a fresh ` + "`docker run`" + ` of 278 and
  549 ms and a bridge start of 9 and 30 ms, for code that did not change between them. Across reports only
  A/B runs on one machine count. The sandbox protocol 2 (one more frame per call, ` + "`started`" + `) was checked
  that way, the code before and after alternated twice in one hour on one machine, Docker, p50: warm call
  1.49 and 2.00 ms before, 1.50 and 1.61 ms after; in process 0.77 and 1.20 ms before, 0.77 and 0.76 ms
  after; a proxied echo 1.38 and 2.19 ms before, 1.50 and 1.24 ms after: no difference beyond the noise.
- **Cancel** (item 10): the first run of this benchmark (2026-11-23, same machine) measured 42 ms from
  cancel to the KeyboardInterrupt in the code, and an A/B of the runtime pinned it on a change of the same
  day: the runtime's interrupter slept through a 250 ms pause after an interrupt (the time a call's
  ` + "`finally`" + ` blocks get before the interrupt is repeated), so the next call's interrupt waited for
  it. It now waits on the call's end instead: 42 ms → 3 ms (sleeping loop, Docker, p50, 10 samples each).
  A busy loop takes a few ms more (the interrupter's first signal lands at the loop's next eval-breaker
  check); under gVisor the signal's own delivery costs about 20 ms more.
- **The warm pool** (item 12a): a pooled session's first call costs 11 to 25 ms over HTTP (more than a
  warm call over stdio, item 1: a fresh interpreter's first call and the session's first requests; not
  profiled yet), against a container start without it: 25× on Docker, 34× on Podman, 70× under gVisor,
  whose start is the slowest. The pool refills in the background, one start at a time.
- **Under load** (item 12b) the 2 pooled sandboxes serve 2 of the 30 sessions at once; the other 28 start
  theirs together, and on two cores the engine completes those starts about one after another (about
  0.35 s each), so the first calls' median is 8 to 9 s and they make most of the wall time. Later calls
  stay near the warm call (p50 11 to 13 ms with 30 sessions sharing two cores). A pool sized for the
  expected burst (` + "`MCP_BRIDGE_POOL_SIZE`" + `) moves those starts before the sessions arrive. Each session
  costs the bridge about 1 MiB and its container about 14 MiB.
- **Tool search** (item 13): 160 queries written after the ranker, by an author who saw only the tools,
  showed how much tuning had fitted the first 230 (recall@5 0.97 → 0.84 on the tune split). Plain-English
  groups of the actions and things tools name, and weights re-tuned on the larger tune split only, brought
  it to 0.92 (tune) and 0.89 (held out); every signal now helps on both splits in the ablation. Queries
  sharing no word with their tool stay the weak kind (0.58 held out); GloVe word vectors gained nothing
  on the tune split and are not shipped.
`

// compareKeys orders section keys by their number, then the rest: 1, 1b,
// 2, …, 9, 10.
func compareKeys(a, b string) int {
	split := func(k string) (int, string) {
		i := 0
		for i < len(k) && k[i] >= '0' && k[i] <= '9' {
			i++
		}
		n, _ := strconv.Atoi(k[:i])
		return n, k[i:]
	}
	an, ar := split(a)
	bn, br := split(b)
	return cmp.Or(cmp.Compare(an, bn), strings.Compare(ar, br))
}

func table(b *bytes.Buffer, header []string, rows [][]string) {
	fmt.Fprintf(b, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat(" --- |", len(header)))
	for _, r := range rows {
		fmt.Fprintf(b, "| %s |\n", strings.Join(r, " | "))
	}
}

// machine describes the host, the engines and the toolchain.
func machine() [][2]string {
	out := [][2]string{{"date", time.Now().UTC().Format("2006-01-02 15:04 MST")}}
	if cpu := firstMatch("/proc/cpuinfo", "model name"); cpu != "" {
		out = append(out, [2]string{"CPU", fmt.Sprintf("%s, %d cores", cpu, runtime.NumCPU())})
	}
	if mem := firstMatch("/proc/meminfo", "MemTotal"); mem != "" {
		out = append(out, [2]string{"memory", mem})
	}
	if osr := firstMatch("/etc/os-release", "PRETTY_NAME"); osr != "" {
		out = append(out, [2]string{"OS", strings.Trim(osr, `"`) + ", kernel " + command("uname", "-r")})
	}
	out = append(out,
		[2]string{"Go", runtime.Version()},
		[2]string{"Docker Engine", command("docker", "version", "--format", "{{.Server.Version}} (API {{.Server.APIVersion}})")},
		[2]string{"Podman", command("podman", "version", "--format", "{{.Server.Version}}")},
		[2]string{"runc", firstLine(command("runc", "--version"))},
		[2]string{"crun", firstLine(command("crun", "--version"))},
		[2]string{"gVisor", firstLine(command("runsc", "--version"))},
		[2]string{"Node.js", command("node", "--version")},
		[2]string{"sandbox image", os.Getenv("MCP_BRIDGE_IMAGE")},
	)
	return out
}

// firstMatch returns the value of the first "key: value" or "key=value"
// line of file that starts with key.
func firstMatch(file, key string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, key) {
			if _, v, ok := strings.Cut(line, ":"); ok && !strings.Contains(line, "=") {
				return strings.TrimSpace(v)
			}
			if _, v, ok := strings.Cut(line, "="); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return ""
}

// command returns the trimmed output of a command, or "not found".
func command(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "not available"
	}
	return strings.TrimSpace(string(out))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
