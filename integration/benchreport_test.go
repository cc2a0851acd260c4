//go:build integration

package integration

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io/fs"
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
	b.WriteString("Written by `scripts/bench`: the Go benchmarks of `integration/bench*_test.go`, each run for a fixed\n" +
		"number of iterations (`go test -tags integration -bench … -args -benchplan PLAN`, below), one sample per\n" +
		"iteration, so a table's count is its benchmark's b.N. Every figure below comes from ONE `go test` process\n" +
		"on ONE machine, so the ratios compare like with like. Goals are targets reported against, not test assertions.\n\n")
	b.WriteString("A quick report, not a gate, for every test run: `MCP_TEST_BENCH_REPORT=1 go test -v -count=1 -tags \"integration $(cat engine/podman_tags.txt)\"\n" +
		"-run '^TestBenchReport$' ./integration/` (`integration/bench_quick_test.go`; 30 to 40 s for Docker and Podman, 10 s more with `MCP_BENCH_RUNSC=1`) measures in one run\n" +
		"the warm call over the bare attach round trip (item 1c's loop, 500 rounds: (c) and (a) over (0)) and the proxied `echo` over the\n" +
		"same call made directly (item 3, 200 calls each), and prints each ratio next to the one item 1c or 3 below recorded, with a note\n" +
		"when it is over 1.25× that. Speed never fails it (a failing call does); it also writes `$MCP_TEST_ARTIFACTS/bench-report.txt`.\n\n")
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
	return b.String()
}

// The lines around the generated part of BENCHMARKS.md: a run replaces
// what stands between them and keeps every line outside them, where the
// results measured apart and the findings are written by hand.
const (
	generatedBegin = "<!-- BEGIN generated by scripts/bench: the next run replaces everything up to the END line; write by hand only after it -->"
	generatedEnd   = "<!-- END generated by scripts/bench -->"
)

// errNoMarkers reports a report file without the generated part's
// markers, which a run refuses to overwrite.
var errNoMarkers = errors.New("no lines marking the generated part")

// spliceReport returns the report file old (nil: none yet) with its
// generated part replaced by generated; the hand-written text before and
// after the markers is kept byte for byte. A file that exists without
// both markers, in order, is refused: writing it would lose what was
// written by hand.
func spliceReport(old []byte, generated string) ([]byte, error) {
	part := generatedBegin + "\n\n" + strings.TrimSpace(generated) + "\n\n" + generatedEnd
	if old == nil {
		return []byte("# Benchmarks\n\n" + part + "\n"), nil
	}
	text := string(old)
	begin := strings.Index(text, generatedBegin)
	end := strings.Index(text, generatedEnd)
	if begin < 0 || end < begin || strings.Count(text, generatedBegin) != 1 || strings.Count(text, generatedEnd) != 1 {
		return nil, fmt.Errorf("%w: want one line %q and, after it, one line %q around what scripts/bench writes", errNoMarkers, generatedBegin, generatedEnd)
	}
	return []byte(text[:begin] + part + text[end+len(generatedEnd):]), nil
}

// writeReport writes the run's report into the generated part of the
// file path, made when missing.
func writeReport(path string) error {
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		old, err = nil, nil
	}
	if err != nil {
		return err
	}
	data, err := spliceReport(old, report.markdown())
	if err != nil {
		return fmt.Errorf("writing the report into %s: %w", path, err)
	}
	return os.WriteFile(path, data, 0o644)
}

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
