package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// laneTimeout bounds the lane check: a sandbox's start and one call.
const laneTimeout = 60 * time.Second

// checkLane, with MCP_BRIDGE_FAST_LANE, starts a sandbox as the bridge
// starts one and says which path its frames take: the fast lane, or the
// engine's stream and why (a bridge in a container, a remote engine,
// gVisor without host sockets).
func (d *doctor) checkLane(ctx context.Context, cfg *config.Config, eng engine.Engine) {
	if !cfg.FastLane {
		return
	}
	began := time.Now()
	lanes, err := entrypoint.NewLanes(cfg.LaneDir, d.log)
	if err != nil {
		d.report(checkResult{Check: "lane", Status: statusFail, Detail: err.Error(), DurationMS: sinceMS(began),
			Hint: "set " + config.EnvFastLaneDir + " to a directory the bridge's user owns, or unset " + config.EnvFastLane})
		return
	}
	defer lanes.Close()
	opts := cfg.Session
	opts.Spec = cfg.SandboxSpec("doctor", nil)
	opts.Lanes, opts.Logger, opts.IdleTimeout = lanes, d.log, -1
	s := entrypoint.New(eng, &opts)
	defer s.Close()
	ctx, cancel := context.WithTimeout(ctx, laneTimeout)
	defer cancel()
	res, err := s.Execute(ctx, "pass", laneTimeout)
	if err == nil && res.Status != entrypoint.StatusSuccess {
		err = fmt.Errorf("the call ended %s: %s", res.Status, res.ExceptionMessage)
	}
	if err != nil {
		d.report(checkResult{Check: "lane", Status: statusFail, Detail: "a sandbox with a fast lane did not run a call: " + err.Error(),
			DurationMS: sinceMS(began), Hint: "unset " + config.EnvFastLane + " to use the engine's stream only"})
		return
	}
	for name, st := range lanes.Status() {
		if name == "" {
			name = "the engine"
		}
		if st.Path == "lane" {
			d.report(checkResult{Check: "lane", Status: statusOK, DurationMS: sinceMS(began),
				Detail: fmt.Sprintf("%s: the frames travel the fast lane, a socket under %s mounted read-only at %s", name, lanes.Dir(), engine.LaneDir)})
			continue
		}
		d.report(checkResult{Check: "lane", Status: statusWarn, DurationMS: sinceMS(began),
			Detail: fmt.Sprintf("%s: the frames travel the engine's stream: %s", name, st.Why),
			Hint:   "the lane needs the engine on this host, sharing its file system (not a bridge in a container, nor a remote engine); under gVisor, runsc --host-uds=open; on an SELinux host, a policy that lets containers connect to the socket"})
	}
}
