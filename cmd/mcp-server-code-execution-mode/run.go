package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/egress"
)

// runCommand serves MCP over stdin/stdout until the client disconnects or
// the process is told to stop. Nothing but MCP frames is written to
// stdout; logs go to stderr.
func runCommand(ctx context.Context, args []string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	if code, ok := parseFlags(fs, runUsage, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: run takes no arguments (got %q)\n", fs.Args())
		return 2
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: not starting: %v\n", err)
		return 2
	}
	return serve(ctx, cfg, cfg.Logger(stderr, slog.LevelInfo), stdin, stdout)
}

// newBridge connects the engine cfg selects and returns a bridge on it,
// its options from cfg as adjust leaves them (nil: as they are), and the
// function that closes them. It fails when the audit log cannot be
// opened: a bridge asked to keep one does not run without it.
func newBridge(cfg *config.Config, log *slog.Logger, adjust func(*mcpbridge.Options)) (*mcpbridge.Bridge, func(), error) {
	var auditLog *audit.Log
	if cfg.AuditLog != "" {
		aopts := cfg.Audit
		aopts.Logger = log
		var err error
		if auditLog, err = audit.Open(cfg.AuditLog, &aopts); err != nil {
			return nil, nil, fmt.Errorf("%s=%s: %w (the bridge keeps no calls it cannot record: name a file in a directory this user can write, "+
				"such as ~/MCPs/audit.jsonl, or unset %s)", config.EnvAuditLog, cfg.AuditLog, err, config.EnvAuditLog)
		}
	}
	var ca *egress.CA
	if cfg.EgressCACert != "" {
		var err error
		if ca, err = egress.LoadCA(cfg.EgressCACert, cfg.EgressCAKey); err != nil {
			auditLog.Close()
			return nil, nil, fmt.Errorf("%s: %w", config.EnvEgressCA, err)
		}
	}
	var lanes *entrypoint.Lanes
	if cfg.FastLane {
		var err error
		if lanes, err = entrypoint.NewLanes(cfg.LaneDir, log); err != nil {
			auditLog.Close()
			return nil, nil, fmt.Errorf("%s: %w", config.EnvFastLane, err)
		}
	}
	eng := newEngine(cfg, log)
	if cfg.Bridge.Session.Sleep != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		why := engine.CanSnapshot(sctx, eng)
		cancel()
		if why != "" {
			eng.Close()
			auditLog.Close()
			lanes.Close()
			return nil, nil, fmt.Errorf("%s=1: %s", config.EnvSnapshots, why)
		}
	}
	opts := cfg.Bridge
	opts.Session.Lanes = lanes
	opts.EgressCA = ca
	opts.Version = version
	opts.Logger = log
	opts.Audit = auditLog
	if adjust != nil {
		adjust(&opts)
	}
	br := mcpbridge.New(eng, &opts)
	return br, func() { br.Close(); eng.Close(); auditLog.Close(); lanes.Close() }, nil
}

// serve runs the bridge on stdin and stdout until the client goes.
func serve(ctx context.Context, cfg *config.Config, log *slog.Logger, stdin io.ReadCloser, stdout io.WriteCloser) int {
	br, stop, err := newBridge(cfg, log, func(opts *mcpbridge.Options) {
		if !cfg.ObserveResultsSet {
			opts.ObserveResults = true // one client: the shapes are its own
		}
		if opts.PoolSize > 0 {
			// One client: its sandbox starts now, in the background,
			// and its first call finds it warm.
			opts.PoolSize, opts.PoolOnce = 1, true
		}
	})
	if err != nil {
		log.Error("not starting", "err", err)
		return 2
	}
	defer stop()
	image := cfg.Session.Spec.Image
	if image == "" {
		image = "(the engine's default)"
	}
	log.Info("serving MCP over stdio", "version", version, "image", image)
	pctx, stopPrepare := context.WithCancel(ctx)
	prepared := make(chan struct{})
	go func() { defer close(prepared); prepareImage(pctx, br, log) }()
	defer func() { stopPrepare(); <-prepared }()
	err = br.Server().Run(ctx, &mcp.IOTransport{Reader: stdin, Writer: stdout})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		log.Error("MCP server stopped", "err", err)
		return 1
	}
	log.Info("MCP client disconnected; stopping")
	return 0
}

// prepareImage starts the pull of the sandbox image as the bridge starts,
// when the engine lacks it, so that a client's first call finds it or
// joins the pull and is told how it goes; the pull's progress is logged.
func prepareImage(ctx context.Context, br *mcpbridge.Bridge, log *slog.Logger) {
	if err := br.PrepareImage(ctx); err != nil && ctx.Err() == nil {
		log.Warn("pulling the sandbox image as the bridge started", "err", err)
	}
}
