package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge"
)

// runCommand serves MCP over stdin/stdout until the client disconnects or
// the process is told to stop. Nothing but MCP frames is written to
// stdout; logs go to stderr.
func runCommand(ctx context.Context, args []string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer, getenv func(string) string) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: run takes no arguments (got %q)\n", args)
		return 2
	}
	log, err := newLogger(stderr, getenv, slog.LevelInfo)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: %v\n", err)
		return 2
	}
	settings, err := engine.LoadSettings(getenv)
	if err == nil {
		var cfg mcpbridge.Config
		cfg, err = mcpbridge.LoadConfig(getenv)
		if err == nil {
			return serve(ctx, log, settings, cfg, stdin, stdout)
		}
	}
	log.Error("not starting", "err", err)
	return 2
}

func serve(ctx context.Context, log *slog.Logger, settings engine.Settings, cfg mcpbridge.Config, stdin io.ReadCloser, stdout io.WriteCloser) int {
	rt := engine.NewRuntime(&engine.RuntimeOptions{Runtime: settings.Runtime, Logger: log})
	defer rt.Close()
	br := mcpbridge.New(mcpbridge.Options{Engine: rt, Settings: settings, Config: cfg, Version: version, Logger: log})
	defer br.Close()
	log.Info("serving MCP over stdio", "version", version, "image", settings.Image)
	err := br.Server().Run(ctx, &mcp.IOTransport{Reader: stdin, Writer: stdout})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		log.Error("MCP server stopped", "err", err)
		return 1
	}
	log.Info("MCP client disconnected; stopping")
	return 0
}
