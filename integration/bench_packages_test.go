//go:build integration

package integration

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkPackages measures package sets and live installs (item 15),
// against a PEP 503 index on loopback serving one small wheel: a
// session's first call with a set the engine has, against one without
// packages (interleaved, seven each; no warm pool, so each first call
// starts its sandbox); the first call of a session with a set the engine
// lacks (its install: three sets); and runtime.install of the wheel in a
// live session, ten after one.
func BenchmarkPackages(b *testing.B) {
	sec := report.section("15", "Packages: a first call with a set, a set's install, runtime.install",
		"variant", "what", "p50", "against", "ratio")
	sec.note("A session's first call (`print(1)`, the sandbox started by it: `MCP_BRIDGE_POOL_SIZE=0`) with " +
		"`MCP_BRIDGE_PACKAGES` naming a set the engine already holds (mounted read-only, its directory added to " +
		"the import path) against the same without packages, interleaved, 7 each; goal: within 10%%. A new set: " +
		"the first call of a session whose set the engine lacks, installing one small wheel from a loopback index " +
		"(an installer container, pip from the host's wheel, the gateway), 3 sets. `runtime.install` of the same " +
		"wheel into a live session, 10 after the first (which also brings pip's wheel into the sandbox).")
	forEachVariant(b, func(b *testing.B, v variant) {
		takePackageVolumes(b, v.engine)
		ix := newTestIndex(b, map[string][]byte{"mcpegresstest-1.0-py3-none-any.whl": testWheel(b)})
		base := append(v.env(), "MCP_BRIDGE_POOL_SIZE=0", "MCP_BRIDGE_PIP_INDEX_URL="+ix.URL+"/simple/")
		first := map[string]any{"code": "import mcpegresstest\nprint(mcpegresstest.VALUE)", "timeout": 120}
		for b.Loop() {
			var installs []time.Duration
			for i := range 3 {
				cs := connectBridge(b, v.engine, append(base, fmt.Sprintf("MCP_BRIDGE_PACKAGES=mcpegresstest>=0.%d", i))...)
				installs = append(installs, timedCall(b, cs, first, "42"))
				cs.Close()
			}
			var with, without []time.Duration
			for range 7 {
				cs := connectBridge(b, v.engine, append(base, "MCP_BRIDGE_PACKAGES=mcpegresstest>=0.0")...)
				with = append(with, timedCall(b, cs, map[string]any{"code": "print(1)"}, "1"))
				cs.Close()
				cs = connectBridge(b, v.engine, base...)
				without = append(without, timedCall(b, cs, map[string]any{"code": "print(1)"}, "1"))
				cs.Close()
			}
			cs := connectBridge(b, v.engine, base...)
			timedCall(b, cs, map[string]any{"code": "from mcp import runtime\nruntime.install_sync('mcpegresstest')", "timeout": 120}, "")
			var live []time.Duration
			for range 10 {
				live = append(live, timedCall(b, cs, map[string]any{"code": "runtime.install_sync('mcpegresstest')", "timeout": 120}, ""))
			}
			cs.Close()
			w, wo := summarize(with).p50, summarize(without).p50
			sec.row(v.label+"/first", v.label, "first call, a set the engine holds", ms(w), ms(wo)+" (no packages)", fmt.Sprintf("%.2f×", float64(w)/float64(wo)))
			sec.row(v.label+"/install", v.label, "first call, a new set (1 small wheel)", ms(summarize(installs).p50), ms(wo)+" (no packages)", fmt.Sprintf("+%s", ms(summarize(installs).p50-wo)))
			sec.row(v.label+"/live", v.label, "runtime.install of 1 small wheel", ms(summarize(live).p50), "—", "—")
			b.ReportMetric(float64(w)/float64(wo), "first-call-ratio")
		}
	})
}
