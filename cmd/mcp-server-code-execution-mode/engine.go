package main

import (
	"log/slog"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/auto"
)

// A closingEngine is an engine the command closes when it is done with it.
type closingEngine interface {
	engine.Engine
	Close() error
}

// newEngine returns the engine cfg selects, connected lazily: a Multi over
// the engines of MCP_BRIDGE_ENGINES when it lists any, else the one engine
// MCP_BRIDGE_RUNTIME selects (or detects).
func newEngine(cfg *config.Config, log *slog.Logger) closingEngine {
	if len(cfg.Engines) > 0 {
		// NewMulti fails only without endpoints.
		if m, err := auto.NewMulti(&auto.MultiOptions{Endpoints: cfg.Engines,
			Logger: log, StopGrace: cfg.Engine.StopGrace, Kubernetes: cfg.Engine.Kubernetes}); err == nil {
			return m
		}
	}
	opts := cfg.Engine
	opts.Logger = log
	return auto.New(&opts)
}
