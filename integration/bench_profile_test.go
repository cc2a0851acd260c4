//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// profileStart wraps the runtime's per-call entry points in cProfile
// profilers from inside the sandbox: the main thread's run_call (compile,
// exec, the output snapshots, the leftover-process scan, the result) and
// the reader thread's handle (decoding a host frame and handing it over).
// The profilers run only inside those calls, so the main thread's idle
// wait for the next frame is not in the profile.
const profileStart = `
import cProfile as _cp, gc as _gc
_rt = [o for o in _gc.get_objects() if type(o).__name__ == "Runtime" and hasattr(o, "chan")][0]
_prof = {"main": _cp.Profile(), "reader": _cp.Profile()}
_orig = {"run_call": _rt.run_call, "handle": _rt.handle}
def _wrap(name, key):
    inner, prof = _orig[name], _prof[key]
    def wrapped(*a):
        prof.enable()
        try:
            return inner(*a)
        finally:
            prof.disable()
    return wrapped
_rt.run_call = _wrap("run_call", "main")
_rt.handle = _wrap("handle", "reader")
`

// profileReport undoes profileStart and prints the profile as JSON: per
// thread, its busy time and the top functions by own time, per call.
const profileReport = `
import json as _json, os as _os, pstats as _ps
for _p in _prof.values():
    _p.disable()
_rt.run_call, _rt.handle = _orig["run_call"], _orig["handle"]
def _label(k):
    f, line, fn = k
    if f == "~":
        return fn
    return "%s:%d %s" % (_os.path.basename(f), line, fn)
_out = {}
for _key, _p in _prof.items():
    _st = _ps.Stats(_p).stats
    _busy = sum(v[2] for v in _st.values())
    _top = sorted(_st.items(), key=lambda kv: -kv[1][2])[:TOP]
    _out[_key] = {"busy": _busy, "top": [[_label(k), v[1], v[2], v[3]] for k, v in _top]}
print(_json.dumps(_out))
`

// A threadProfile is one thread's cProfile over the profiled calls.
type threadProfile struct {
	Busy float64 `json:"busy"`
	// Top rows are [label, calls, own seconds, cumulative seconds].
	Top [][]any `json:"top"`
}

// BenchmarkRuntimeProfile profiles the runtime's work for a warm call
// inside the sandbox with cProfile (item 1d): b.N calls of `pass`, after
// timing as many without the profiler. One op is one profiled call.
func BenchmarkRuntimeProfile(b *testing.B) {
	const top = 12
	sec := report.section("1d", "The runtime's per-call work in the sandbox, profiled with cProfile",
		"variant", "thread", "function", "calls per call", "own µs per call", "cumulative µs per call")
	sec.note("`Session.Execute(\"pass\")` in a warm session, b.N calls under Python's cProfile, started and read by code run in the sandbox "+
		"(it wraps the runtime's `run_call`, the main thread's whole call, and `handle`, the reader thread's decoding of a host frame, "+
		"so the idle wait between calls is not counted). Rows: each thread's busy time, then its top %d functions by own time. "+
		"cProfile's own cost inflates small functions; the first row of each variant is the same calls' p50 without the profiler, for scale.", top)
	forEachVariant(b, func(b *testing.B, v variant) {
		ctx := context.Background()
		s := benchSession(b, v, "bench-profile")
		for range 20 {
			timedExecute(b, ctx, s, "pass")
		}
		var plain []time.Duration
		for range 200 {
			plain = append(plain, timedExecute(b, ctx, s, "pass"))
		}
		timedExecute(b, ctx, s, profileStart)
		n := 0
		for b.Loop() {
			timedExecute(b, ctx, s, "pass")
			n++
		}
		res, err := s.Execute(ctx, strings.Replace(profileReport, "TOP", fmt.Sprint(top), 1), 0)
		if err != nil || res.Status != entrypoint.StatusSuccess {
			b.Fatalf("reading the profile: %+v %v", res, err)
		}
		var prof map[string]threadProfile
		if err := json.Unmarshal([]byte(res.Stdout), &prof); err != nil {
			b.Fatalf("decoding the profile %q: %v", res.Stdout, err)
		}
		us := func(sec float64) string { return fmt.Sprintf("%.1f", sec*1e6/float64(n)) }
		sec.row(v.label+" wall", v.label, "", "Execute(\"pass\") p50 without the profiler", "", ms(summarize(plain).p50), "")
		for _, thread := range []string{"main", "reader"} {
			p := prof[thread]
			sec.row(v.label+thread+" busy", v.label, thread, "all (busy time)", "", us(p.Busy), "")
			for i, r := range p.Top {
				if len(r) != 4 {
					b.Fatalf("profile row %v", r)
				}
				label, _ := r[0].(string)
				calls, _ := r[1].(float64)
				own, _ := r[2].(float64)
				cum, _ := r[3].(float64)
				sec.row(fmt.Sprintf("%s%s%02d", v.label, thread, i), v.label, thread, "`"+label+"`",
					fmt.Sprintf("%.2f", calls/float64(n)), us(own), us(cum))
			}
			b.ReportMetric(p.Busy*1e6/float64(n), thread+"-busy-µs")
		}
	})
}
