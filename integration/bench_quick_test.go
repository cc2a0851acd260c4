//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// TestBenchReport is the quick benchmark report: a report, not a gate. It
// measures, in one run, the warm call and the proxied call each against a
// baseline of the same run, and prints their ratios next to the ratios
// BENCHMARKS.md recorded, so that a slowdown shows in every run's log:
//
//   - item 1c's loop as scripts/bench runs it (the same paths, interleaved
//     call by call, 20 warm-up rounds, 500 rounds): run_python print(1)
//     through the built binary over stdio, and Session.Execute print(1) in
//     process, each over the bare attach round trip (a line echoed through
//     a container of the same image);
//   - item 3: server-everything's echo called from sandbox code (timed in
//     the sandbox) over the same call made by a go-sdk client straight to
//     the same server build, 200 calls each, in alternating rounds of 25.
//
// A ratio over 1.25× its recorded one gets a "slower than recorded" note.
// Speed never fails it; a call that fails does. It runs only with
// MCP_TEST_BENCH_REPORT=1, on the engines of MCP_TEST_ENGINES (Docker
// under gVisor too with MCP_BENCH_RUNSC=1), and writes the report to
// $MCP_TEST_ARTIFACTS/bench-report.txt when that is set. Run it with -v:
// go test prints a passing package's output only then.
func TestBenchReport(t *testing.T) {
	if os.Getenv("MCP_TEST_BENCH_REPORT") != "1" {
		t.Skip("the quick benchmark report runs with MCP_TEST_BENCH_REPORT=1")
	}
	began := time.Now()
	load := loadAverage()
	rec, recErr := readRecorded("../BENCHMARKS.md")
	var figures []quickFigure
	defer func() {
		text := quickReport(figures, rec, recErr, load, time.Since(began))
		fmt.Print("\n" + text + "\n")
		if dir := os.Getenv("MCP_TEST_ARTIFACTS"); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Error(err)
			} else if err := os.WriteFile(filepath.Join(dir, "bench-report.txt"), []byte(text), 0o644); err != nil {
				t.Error(err)
			}
		}
	}()

	direct := directEverything(t)
	for range 10 {
		if err := echoDirect(direct, "warm-up"); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range quickVariants() {
		t.Run(v.label, func(t *testing.T) {
			figures = append(figures, quickWarm(t, v, rec)...)
			figures = append(figures, quickProxied(t, v, direct, rec))
		})
	}
}

// quickVariants are the engines under test, with Docker under gVisor when
// MCP_BENCH_RUNSC=1 and runsc is installed.
func quickVariants() []variant {
	var out []variant
	for _, name := range engineNames() {
		if name != engine.BackendKubernetes {
			out = append(out, variant{label: name, engine: name})
		}
	}
	if _, err := exec.LookPath("runsc"); err == nil && os.Getenv("MCP_BENCH_RUNSC") == "1" && slices.Contains(engineNames(), "docker") {
		out = append(out, variant{label: "docker+runsc", engine: "docker", oci: "runsc"})
	}
	return withLanes(out)
}

// A quickFigure is one line of the report: a p50 over its same-run
// baseline's p50, and the ratio BENCHMARKS.md recorded for the same pair.
type quickFigure struct {
	variant, name, base string
	p50, baseP50        time.Duration
	recorded            float64 // 0: not found in BENCHMARKS.md
}

func (f quickFigure) ratio() float64 { return float64(f.p50) / float64(f.baseP50) }

// The paths of item 1c the report uses, by their names' prefixes.
const (
	pathAttach  = "(0) "
	pathExecute = "(a) "
	pathStdio   = "(c) "
)

// quickWarm runs item 1c's loop on v and returns the warm call over stdio
// and the in-process Execute, each over the attach round trip.
func quickWarm(t *testing.T, v variant, rec *recordedFigures) []quickFigure {
	paths, _ := warmCallPaths(t, v)
	interleave(paths, times(20))
	samples := interleave(paths, times(500))
	p50 := func(prefix string) time.Duration {
		i := slices.IndexFunc(paths, func(p callPath) bool { return strings.HasPrefix(p.name, prefix) })
		return summarize(samples[i]).p50
	}
	fig := func(name, path string) quickFigure {
		return quickFigure{variant: v.label, name: name, p50: p50(path),
			base: "bare attach round trip, 1c (0)", baseP50: p50(pathAttach),
			recorded: rec.ratio1c(v.label, path)}
	}
	return []quickFigure{
		fig("warm run_python print(1), stdio bridge, 1c (c)", pathStdio),
		fig("Execute print(1) in process, 1c (a)", pathExecute),
	}
}

// quickProxied times 200 echo calls from the sandbox (in the sandbox) and
// 200 straight to the server with direct, in alternating rounds of 25.
func quickProxied(t *testing.T, v variant, direct *mcp.ClientSession, rec *recordedFigures) quickFigure {
	home, _ := npmHome(t)
	cs := connectBridge(t, v.engine, append(v.env(), "HOME="+home)...)
	if text, isErr := runPython(t, cs, map[string]any{"code": proxiedWarmUp, "servers": []string{"everything"}}); isErr {
		t.Fatalf("warm-up: %q", text)
	}
	var directS, sandboxS []time.Duration
	for range 8 {
		for range 25 {
			began := time.Now()
			if err := echoDirect(direct, "x"); err != nil {
				t.Fatal(err)
			}
			directS = append(directS, time.Since(began))
		}
		sandboxS = append(sandboxS, sandboxTimes(t, cs, proxiedSequential, 25, 25)...)
	}
	return quickFigure{variant: v.label, name: "proxied echo, timed in the sandbox, 3",
		p50: summarize(sandboxS).p50, base: "direct go-sdk call, same server, 3", baseP50: summarize(directS).p50,
		recorded: rec.ratio3(v.label)}
}

// slower is how much more than its recorded ratio a ratio may be before
// the report says so.
const slower = 1.25

// quickReport renders the figures as a table.
func quickReport(figures []quickFigure, rec *recordedFigures, recErr error, load string, took time.Duration) string {
	var b bytes.Buffer
	b.WriteString("bench report (a report, not a gate): p50s over same-run baselines, against BENCHMARKS.md\n")
	if recErr != nil {
		fmt.Fprintf(&b, "recorded: none (%v)\n", recErr)
	} else {
		fmt.Fprintf(&b, "recorded: BENCHMARKS.md items 1c and 3, run of %s; a note when a ratio is over %.2f× its recorded one\n", rec.date, slower)
	}
	fmt.Fprintf(&b, "host: %d CPUs, load average at the start %s, at the end %s; the report took %.1f s\n\n",
		runtime.NumCPU(), load, loadAverage(), took.Seconds())
	var tb bytes.Buffer
	w := tabwriter.NewWriter(&tb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "variant\tfigure\tp50\tbaseline (same run)\tp50\tratio\trecorded\tnote")
	var notes int
	for _, f := range figures {
		recorded, note := "—", ""
		if f.recorded > 0 {
			recorded = fmt.Sprintf("%.2f×", f.recorded)
			if f.ratio() > slower*f.recorded {
				note = fmt.Sprintf("slower than recorded by %.0f%%", (f.ratio()/f.recorded-1)*100)
				notes++
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%.2f×\t%s\t%s\n", f.variant, f.name, ms(f.p50), f.base, ms(f.baseP50), f.ratio(), recorded, note)
	}
	w.Flush()
	for _, line := range strings.SplitAfter(tb.String(), "\n") {
		b.WriteString(strings.TrimRight(line, " \n"))
		if strings.HasSuffix(line, "\n") {
			b.WriteString("\n")
		}
	}
	if notes > 0 {
		fmt.Fprintf(&b, "\n%d of %d ratios are over %.2f× their recorded ones: compare the commits side by side (scripts/ab) before reading it as a regression (BENCHMARKS.md item 22)\n", notes, len(figures), slower)
	}
	return b.String()
}

// recordedFigures are the p50s of BENCHMARKS.md's tables, by item.
type recordedFigures struct {
	date   string
	tables map[string]mdTable
}

// An mdTable is one item's table as report.markdown renders it.
type mdTable struct {
	header []string
	rows   [][]string
}

// readRecorded reads the report scripts/bench wrote.
func readRecorded(path string) (*recordedFigures, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return &recordedFigures{}, err
	}
	rec := &recordedFigures{tables: map[string]mdTable{}}
	var key string
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "- date: ") && rec.date == "":
			rec.date = strings.TrimPrefix(line, "- date: ")
		case strings.HasPrefix(line, "## "):
			key, _, _ = strings.Cut(strings.TrimPrefix(line, "## "), ". ")
		case strings.HasPrefix(line, "| ") && key != "":
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			t, ok := rec.tables[key]
			if !ok {
				t.header = cells
			} else if !strings.HasPrefix(cells[0], "---") {
				t.rows = append(t.rows, cells)
			}
			rec.tables[key] = t
		}
	}
	if rec.date == "" || rec.tables["1c"].header == nil || rec.tables["3"].header == nil {
		return rec, fmt.Errorf("%s: no date, item 1c or item 3", path)
	}
	return rec, nil
}

// p50 returns the p50 column col of the first row of item's table that
// match accepts.
func (r *recordedFigures) p50(item, col string, match func(row []string) bool) (time.Duration, bool) {
	t := r.tables[item]
	i := slices.Index(t.header, col)
	if i < 0 {
		return 0, false
	}
	for _, row := range t.rows {
		if i < len(row) && match(row) {
			v, ok := strings.CutSuffix(row[i], " ms")
			f, err := strconv.ParseFloat(v, 64)
			if !ok || err != nil || f <= 0 {
				return 0, false
			}
			return time.Duration(f * float64(time.Millisecond)), true
		}
	}
	return 0, false
}

// ratio returns a over b, 0 when either was not found.
func ratio(a time.Duration, aok bool, b time.Duration, bok bool) float64 {
	if !aok || !bok {
		return 0
	}
	return float64(a) / float64(b)
}

// ratio1c is item 1c's p50 of path over the attach round trip's, for
// variant label.
func (r *recordedFigures) ratio1c(label, path string) float64 {
	row := func(prefix string) func([]string) bool {
		return func(row []string) bool { return len(row) > 1 && row[0] == label && strings.HasPrefix(row[1], prefix) }
	}
	a, aok := r.p50("1c", "p50", row(path))
	b, bok := r.p50("1c", "p50", row(pathAttach))
	return ratio(a, aok, b, bok)
}

// ratio3 is item 3's p50 of the sandbox path over the direct call's.
func (r *recordedFigures) ratio3(label string) float64 {
	a, aok := r.p50("3", "p50 per call", func(row []string) bool { return row[0] == "sandbox, "+label })
	b, bok := r.p50("3", "p50 per call", func(row []string) bool { return strings.HasPrefix(row[0], "direct") })
	return ratio(a, aok, b, bok)
}

// TestBenchRecordedRatios checks that the quick report finds its recorded
// ratios in BENCHMARKS.md, so that a change to the report's tables does
// not leave it comparing with nothing.
func TestBenchRecordedRatios(t *testing.T) {
	rec, err := readRecorded("../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		what string
		got  float64
	}{
		{"1c (c) / (0), docker", rec.ratio1c("docker", pathStdio)},
		{"1c (a) / (0), docker", rec.ratio1c("docker", pathExecute)},
		{"3 sandbox / direct, docker", rec.ratio3("docker")},
	} {
		if r.got < 1 || r.got > 100 {
			t.Errorf("BENCHMARKS.md: %s = %v, want a ratio read from its tables", r.what, r.got)
		}
	}
}

// loadAverage is /proc/loadavg's first three fields.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}
