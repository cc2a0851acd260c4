//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// utcpResult is the line integration/utcp/chain.mjs prints.
type utcpResult struct {
	Peer    string  `json:"peer"`
	Version string  `json:"version"`
	Node    string  `json:"node"`
	N       int     `json:"n"`
	P50     float64 `json:"p50_ms"`
	P95     float64 `json:"p95_ms"`
	Mean    float64 `json:"mean_ms"`
	Min     float64 `json:"min_ms"`
}

// utcpChain runs the get-sum → echo chain n times through UTCP's
// code-mode (integration/utcp, installed by scripts/provision) after 10
// warm-up runs and returns its figures.
func utcpChain(t testing.TB, n int) utcpResult {
	t.Helper()
	dir, err := filepath.Abs("utcp")
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@utcp", "code-mode")); err != nil {
		t.Fatalf("the UTCP code-mode peer is not installed (run scripts/provision): %v", err)
	}
	cmd := exec.Command(node, "chain.mjs", "-n", strconv.Itoa(max(n, 1)), "-warmup", "10")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running the UTCP code-mode chain: %v\n%s", err, out)
	}
	var r utcpResult
	if err := json.Unmarshal(out, &r); err != nil || r.N == 0 || r.P50 <= 0 {
		t.Fatalf("the UTCP code-mode chain printed %q: %v", out, err)
	}
	return r
}

// msf formats milliseconds as ms formats a duration.
func msf(v float64) string { return ms(time.Duration(v * float64(time.Millisecond))) }
