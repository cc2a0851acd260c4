//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// megabytePrint prints 1 MiB: 1,024 numbered lines of 1,024 bytes.
const megabytePrint = `for i in range(1024):
    print("%04d " % i + "row of a large table; " * 46 + "x" * 6)`

// BenchmarkOutputTokens is item 11a: what a call that prints 1 MiB costs
// a model, with the output budget (the default, 32 KiB) and without it
// (MCP_BRIDGE_OUTPUT_BUDGET=1g), on Docker. A count, not a latency: run it
// with -benchtime 1x.
func BenchmarkOutputTokens(b *testing.B) {
	sec := report.section("11a", "Rich results: the tokens of a 1 MiB output",
		"bridge", "text content bytes", "text cl100k_base", "whole result bytes", "whole result cl100k_base", "whole result o200k_base")
	for b.Loop() {
		var labels, texts, wholes []string
		for _, v := range []struct{ label, budget string }{
			{"output budget 32 KiB (default)", ""},
			{"no budget (`MCP_BRIDGE_OUTPUT_BUDGET=1g`)", "1g"},
		} {
			cs := connectBridge(b, "docker", "MCP_BRIDGE_OUTPUT_BUDGET="+v.budget)
			res := callRich(b, cs, megabytePrint)
			if res.IsError {
				b.Fatalf("%s: the call failed", v.label)
			}
			raw, _ := json.Marshal(res)
			labels = append(labels, v.label)
			texts = append(texts, res.Content[0].(*mcp.TextContent).Text)
			wholes = append(wholes, string(raw))
			cs.Close()
		}
		counts := countTokens(b, append(texts, wholes...)...)
		n := len(texts)
		for i, l := range labels {
			sec.row(l, l, strconv.Itoa(len(texts[i])), strconv.Itoa(counts[i].CL100K),
				strconv.Itoa(len(wholes[i])), strconv.Itoa(counts[n+i].CL100K), strconv.Itoa(counts[n+i].O200K))
		}
		b.ReportMetric(float64(counts[0].CL100K), "cl100k-text-tokens-budget")
		b.ReportMetric(float64(counts[1].CL100K), "cl100k-text-tokens-no-budget")
		report.headline("a 1 MiB print, tokens of the text a model reads (budget on)", "≤ 10,000 (was ~250,000)",
			fmt.Sprintf("%d (budget off: %d)", counts[0].CL100K, counts[1].CL100K), counts[0].CL100K <= 10000)
		sec.note("One call printing 1,024 lines of 1,024 bytes (`%s`), on one bridge each. The whole result is the JSON of "+
			"`CallToolResult` (text content, the link to the whole output, `structuredContent`); counted with js-tiktoken. "+
			"With the budget, the text keeps the head and the tail (16 KiB each) around a marker, and the whole output "+
			"stays readable as `sandbox://output/1`. `structuredContent` carries the same (cut) lines again, so a client "+
			"that hands a model both doubles the count; most hand it the text.", strings.ReplaceAll(megabytePrint, "\n", "⏎"))
	}
}

// richCode are the calls item 11b times, in the data image.
var richCode = []struct{ key, label, code string }{
	{"print", "`print(1)` (baseline)", "print(1)"},
	{"figure", "a line plot, `plt.show()` → one image/png", "plt.plot(range(50), [i * i for i in range(50)]); plt.show()"},
	{"csv", "a 200 KiB CSV to `/workspace/out` → embedded", "df.to_csv('/workspace/out/t.csv', index=False)"},
	{"file", "a 5 MiB file to `/workspace/out` → resource_link", "open('/workspace/out/big.bin', 'wb').write(blob)"},
}

// BenchmarkRichResults is item 11b: what images and files add to a warm
// call, per engine, in the data image. One op makes each call of
// richCode once, then reads the 5 MiB file back with resources/read.
func BenchmarkRichResults(b *testing.B) {
	header := []string{"variant", "calls"}
	for _, c := range richCode {
		header = append(header, c.label+" p50")
	}
	header = append(header, "`resources/read` of the 5 MiB file p50")
	sec := report.section("11b", "Rich results: figures and files, warm calls", header...)
	sec.note("Warm calls on one bridge per variant with `MCP_BRIDGE_IMAGE` the data image, after 3 warm-up rounds " +
		"(the first imports pyplot). Each op makes the four calls in turn, then reads the 5 MiB file back: the bridge " +
		"archives `/workspace/out` through the engine's API and takes the file from the archive (base64 in the JSON-RPC answer). " +
		"Small files (up to 256 KiB, 1 MiB per call) and images come with the result over the protocol instead (`file` frames); " +
		"through the archive, the CSV call took 217 ms on Docker and 138 ms on Podman (measured 2026-11-23 before that change).")
	forEachVariant(b, func(b *testing.B, v variant) {
		cs := liveBridge(b, v.engine, nil, append(v.env(), "MCP_BRIDGE_IMAGE="+dataImage())...)
		setup := callRich(b, cs, `import os, pandas as pd, matplotlib.pyplot as plt
df = pd.DataFrame({"a": range(20000), "b": [i * 0.5 for i in range(20000)]})
print(len(df.to_csv(index=False)))
blob = os.urandom(5 << 20)`)
		if setup.IsError {
			b.Fatalf("set-up: %s", setup.Content[0].(*mcp.TextContent).Text)
		}
		samples := make([][]time.Duration, len(richCode)+1)
		round := func(keep bool) {
			for i, c := range richCode {
				began := time.Now()
				res := callRich(b, cs, c.code)
				took := time.Since(began)
				if res.IsError || (c.key == "figure" && len(sortContent(b, res).images) != 1) ||
					(c.key == "file" && len(sortContent(b, res).links) != 1) || (c.key == "csv" && len(sortContent(b, res).embedded) != 1) {
					b.Fatalf("%s: unexpected result %+v", c.key, res.Content)
				}
				if keep {
					samples[i] = append(samples[i], took)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			began := time.Now()
			read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "sandbox://files/big.bin"})
			took := time.Since(began)
			if err != nil || len(read.Contents[0].Blob) != 5<<20 {
				b.Fatalf("resources/read: %v", err)
			}
			if keep {
				samples[len(richCode)] = append(samples[len(richCode)], took)
			}
		}
		for range 3 {
			round(false)
		}
		for b.Loop() {
			round(true)
		}
		row := []string{v.label, strconv.Itoa(len(samples[0]))}
		for i, s := range samples {
			st := summarize(s)
			row = append(row, ms(st.p50))
			name := "read"
			if i < len(richCode) {
				name = richCode[i].key
			}
			b.ReportMetric(float64(st.p50)/float64(time.Millisecond), name+"-p50-ms")
		}
		sec.row(v.label, row...)
	})
}
