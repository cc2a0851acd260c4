//go:build integration

package integration

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge"
)

// inProcessBridge starts a bridge on v in this process, with the receiving
// middlewares mw, and returns a client connected to it through an
// in-process pipe with the stdio transport's framing.
func inProcessBridge(b testing.TB, v variant, mw ...mcp.Middleware) *mcp.ClientSession {
	b.Helper()
	ctx := context.Background()
	opts := settings(b).Bridge
	opts.Logger = testLogger()
	opts.Session.Spec.OCIRuntime = v.oci
	opts.PoolSize = 0
	if v.lane {
		lanes, err := entrypoint.NewLanes(filepath.Join(b.TempDir(), "lanes"), testLogger())
		if err != nil {
			b.Fatal(err)
		}
		opts.Session.Lanes = lanes
	}
	br := mcpbridge.New(connect(b, v.engine), &opts)
	b.Cleanup(func() { br.Close() })
	br.Server().AddReceivingMiddleware(mw...)
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	go br.Server().Run(ctx, &mcp.IOTransport{Reader: sr, Writer: sw})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "inproc", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// cpuGroups names what a CPU sample's innermost function does, by prefix,
// first match wins.
var cpuGroups = []struct{ prefix, group string }{
	{"runtime.mallocgc", "allocation"},
	{"runtime.(*mcache)", "allocation"},
	{"runtime.(*mheap)", "allocation"},
	{"runtime.(*mcentral)", "allocation"},
	{"runtime.memclrNoHeapPointers", "allocation"},
	{"runtime.nextFreeFast", "allocation"},
	{"runtime.heapSetType", "allocation"},
	{"runtime.gc", "garbage collection"},
	{"runtime.scan", "garbage collection"},
	{"runtime.markroot", "garbage collection"},
	{"runtime.greyobject", "garbage collection"},
	{"runtime.findObject", "garbage collection"},
	{"runtime.(*gcWork)", "garbage collection"},
	{"runtime.(*gcBits)", "garbage collection"},
	{"runtime.(*mspan)", "garbage collection"},
	{"runtime.(*gcControllerState)", "garbage collection"},
	{"runtime.sweepone", "garbage collection"},
	{"runtime.bgsweep", "garbage collection"},
	{"runtime.(*sweepLocked)", "garbage collection"},
	{"runtime.wbBuf", "garbage collection"},
	{"runtime.bulkBarrier", "garbage collection"},
	{"runtime.typePointers", "garbage collection"},
	{"runtime.tryDeferToSpanScan", "garbage collection"},
	{"internal/runtime/gc", "garbage collection"},
	{"gcWriteBarrier", "garbage collection"},
	{"runtime.madvise", "garbage collection"},
	{"runtime.sysUnused", "garbage collection"},
	{"runtime.findfunc", "stack walks (garbage collection, profiler)"},
	{"runtime.step", "stack walks (garbage collection, profiler)"},
	{"runtime.pcvalue", "stack walks (garbage collection, profiler)"},
	{"runtime.funcInfo", "stack walks (garbage collection, profiler)"},
	{"runtime.(*unwinder)", "stack walks (garbage collection, profiler)"},
	{"syscall.", "system calls (pipe and socket reads and writes)"},
	{"internal/runtime/syscall", "system calls (pipe and socket reads and writes)"},
	{"runtime.futex", "scheduler: sleeping and waking goroutines"},
	{"runtime.usleep", "scheduler: sleeping and waking goroutines"},
	{"runtime.epoll", "scheduler: sleeping and waking goroutines"},
	{"runtime.netpoll", "scheduler: sleeping and waking goroutines"},
	{"runtime.lock2", "scheduler: sleeping and waking goroutines"},
	{"runtime.unlock2", "scheduler: sleeping and waking goroutines"},
	{"runtime.", "Go runtime, other (scheduler, maps, channels, atomics, copies)"},
	{"internal/poll", "I/O plumbing (net, bufio, io, bytes)"},
	{"internal/runtime/", "Go runtime, other (scheduler, maps, channels, atomics, copies)"},
	{"internal/", "Go runtime, other (scheduler, maps, channels, atomics, copies)"},
	{"aeshash", "Go runtime, other (scheduler, maps, channels, atomics, copies)"},
	{"memeqbody", "Go runtime, other (scheduler, maps, channels, atomics, copies)"},
	{"strconv.", "JSON encoding and decoding"},
	{"encoding/json", "JSON encoding and decoding"},
	{"github.com/segmentio/", "JSON encoding and decoding"},
	{"encoding/base64", "JSON encoding and decoding"},
	{"unicode/utf8", "JSON encoding and decoding"},
	{"github.com/google/jsonschema-go", "go-sdk: schema validation"},
	{"github.com/modelcontextprotocol/go-sdk", "go-sdk: MCP messages and dispatch"},
	{"github.com/mcp-code-exec/", "this repository (bridge, session, engine)"},
	{"github.com/docker/", "engine clients"},
	{"github.com/containers/", "engine clients"},
	{"net.", "I/O plumbing (net, bufio, io, bytes)"},
	{"net/", "I/O plumbing (net, bufio, io, bytes)"},
	{"bufio.", "I/O plumbing (net, bufio, io, bytes)"},
	{"io.", "I/O plumbing (net, bufio, io, bytes)"},
	{"bytes.", "I/O plumbing (net, bufio, io, bytes)"},
}

// cpuGroup returns the group of function fn.
func cpuGroup(fn string) string {
	for _, g := range cpuGroups {
		if strings.HasPrefix(fn, g.prefix) {
			return g.group
		}
	}
	return "other"
}

// cpuSpans are the parts of a call a sample is counted in when any of its
// frames is the named function (inclusive: parts nest).
var cpuSpans = []struct{ fn, part string }{
	{"github.com/modelcontextprotocol/go-sdk/mcp.(*ClientSession).CallTool", "the client's CallTool (encode, wait, decode the result)"},
	{"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge.(*Bridge).runPython", "the bridge's run_python handler"},
	{"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge.parseArgs", "… its argument validation"},
	{"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint.(*Session).Run", "… Session.Run (frame out, frames in)"},
	{"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/render.Outcome.Result", "… rendering the result"},
	{"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2.(*Connection).readIncoming", "go-sdk: reading and decoding messages (both ends)"},
	{"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2.(*Connection).write", "go-sdk: encoding and writing messages (both ends)"},
	{"runtime.gcBgMarkWorker", "background garbage collection"},
}

// BenchmarkBridgeProfile profiles the CPU of a warm call in the bridge's
// process (item 1e): run_python of print(1) through the bridge in process
// (path (b) of item 1c: client, bridge, the session's host side), b.N
// calls under the Go CPU profiler, read with github.com/google/pprof.
// One op is one call. MCP_BENCH_PROFILES=DIR keeps each variant's
// profile there (bridge-VARIANT.pprof), for go tool pprof.
func BenchmarkBridgeProfile(b *testing.B) {
	sec := report.section("1e", "The bridge's CPU per warm call, profiled with pprof",
		"variant", "table", "what", "CPU µs per call", "share")
	sec.note("`run_python` of `print(1)` through the bridge in process (path (b) of item 1c: the client, the bridge and the session's host side in one process), " +
		"b.N calls under Go's CPU profiler (100 Hz), read with `github.com/google/pprof/profile`. " +
		"*by kind*: each sample counted once, by its innermost function. *by part*: a sample counts toward every part one of its frames is in (parts nest; … marks a part of the handler). " +
		"CPU, not wall time: the rest of a call's wall time is waiting for the sandbox.")
	forEachVariant(b, func(b *testing.B, v variant) {
		cs := inProcessBridge(b, v)
		args := map[string]any{"code": "print(1)"}
		for range 20 {
			timedCall(b, cs, args, "1")
		}
		var buf bytes.Buffer
		if err := pprof.StartCPUProfile(&buf); err != nil {
			b.Skipf("CPU profiler busy (-cpuprofile?): %v", err)
		}
		n := 0
		began := time.Now()
		for b.Loop() {
			timedCall(b, cs, args, "1")
			n++
		}
		wall := time.Since(began)
		pprof.StopCPUProfile()
		if dir := os.Getenv("MCP_BENCH_PROFILES"); dir != "" {
			if err := os.WriteFile(filepath.Join(dir, "bridge-"+v.label+".pprof"), buf.Bytes(), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		p, err := profile.Parse(&buf)
		if err != nil {
			b.Fatalf("reading the CPU profile: %v", err)
		}
		kinds, parts, total := cpuBreakdown(p)
		if total == 0 {
			b.Fatal("the CPU profile has no samples")
		}
		per := func(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d.Microseconds())/float64(n)) }
		share := func(d time.Duration) string { return fmt.Sprintf("%.0f%%", 100*float64(d)/float64(total)) }
		sec.row(v.label+"0", v.label, "", fmt.Sprintf("all (%d calls, %s wall per call)", n, ms(wall/time.Duration(n))), per(total), "100%")
		for i, k := range kinds {
			sec.row(fmt.Sprintf("%s1%02d", v.label, i), v.label, "by kind", k.name, per(k.d), share(k.d))
		}
		for i, s := range cpuSpans {
			sec.row(fmt.Sprintf("%s2%02d", v.label, i), v.label, "by part", s.part, per(parts[s.part]), share(parts[s.part]))
		}
		b.ReportMetric(float64(total.Microseconds())/float64(n), "cpu-µs/call")
	})
}

// A cpuKind is a group of cpuGroups and its CPU time.
type cpuKind struct {
	name string
	d    time.Duration
}

// cpuBreakdown sums p's CPU samples by kind (largest first) and by part,
// and returns their total.
func cpuBreakdown(p *profile.Profile) ([]cpuKind, map[string]time.Duration, time.Duration) {
	cpu := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool { return t.Type == "cpu" })
	if cpu < 0 {
		return nil, nil, 0
	}
	byKind := map[string]time.Duration{}
	parts := map[string]time.Duration{}
	var total time.Duration
	for _, s := range p.Sample {
		d := time.Duration(s.Value[cpu])
		total += d
		leaf := "other"
		if len(s.Location) > 0 && len(s.Location[0].Line) > 0 {
			leaf = s.Location[0].Line[0].Function.Name
		}
		byKind[cpuGroup(leaf)] += d
		seen := map[string]bool{}
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				for _, sp := range cpuSpans {
					if line.Function.Name == sp.fn && !seen[sp.part] {
						seen[sp.part] = true
						parts[sp.part] += d
					}
				}
			}
		}
	}
	var kinds []cpuKind
	for k, d := range byKind {
		kinds = append(kinds, cpuKind{k, d})
	}
	slices.SortFunc(kinds, func(a, b cpuKind) int {
		return cmp.Or(cmp.Compare(b.d, a.d), strings.Compare(a.name, b.name))
	})
	return kinds, parts, total
}
