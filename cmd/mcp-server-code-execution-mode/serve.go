package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/oauth"
)

// Bounds of the HTTP server.
const (
	readHeaderTimeout = 10 * time.Second
	idleConnTimeout   = 120 * time.Second
	maxHeaderBytes    = 64 << 10
	// defaultDrain is how long a stopping server lets calls in flight
	// finish before it ends their sessions (MCP_BRIDGE_DRAIN_TIMEOUT).
	defaultDrain = 30 * time.Second
)

// serveCommand serves MCP over Streamable HTTP until told to stop.
func serveCommand(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, ready func(addr string)) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("http", "", "serve Streamable HTTP on this address, such as 127.0.0.1:8080 (required)")
	certFile := fs.String("tls-cert", "", "serve HTTPS with this certificate (PEM); needs -tls-key")
	keyFile := fs.String("tls-key", "", "the private key (PEM) of -tls-cert")
	if code, ok := parseFlags(fs, serveUsage, args, stdout, stderr); !ok {
		return code
	}
	fail := failer(stderr, "serve")
	switch {
	case fs.NArg() > 0:
		return fail(2, "unexpected arguments %q", fs.Args())
	case *addr == "":
		return fail(2, "-http ADDR is required, such as -http 127.0.0.1:8080")
	case (*certFile == "") != (*keyFile == ""):
		return fail(2, "-tls-cert and -tls-key go together")
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return fail(2, "not starting: %v", err)
	}
	if cfg.OAuth != nil {
		// The verifier fetches nothing until a token comes.
		cfg.HTTP.OAuth, _ = oauth.New(cfg.OAuth)
	}
	if err := mcpbridge.CheckListen(*addr, &cfg.HTTP); err != nil {
		return fail(2, "not starting: %v", err)
	}
	var tlsConfig *tls.Config
	if *certFile != "" {
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			return fail(2, "not starting: loading the TLS certificate: %v", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	log := cfg.Logger(stderr, slog.LevelInfo)
	if cfg.OAuth != nil {
		o := *cfg.OAuth
		o.Logger = log
		cfg.HTTP.OAuth, _ = oauth.New(&o)
		log.Info("serving as an OAuth resource server", "issuer", o.Issuer, "resource", o.Resource, "scopes", o.Scopes)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail(1, "listening: %v", err)
	}
	if err := mcpbridge.CheckListen(ln.Addr().String(), &cfg.HTTP); err != nil {
		ln.Close() // the name resolved beyond loopback
		return fail(2, "not starting: %v", err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}

	br, stop, err := newBridge(cfg, log, nil)
	if err != nil {
		ln.Close()
		return fail(2, "not starting: %v", err)
	}
	defer stop()

	srv := &http.Server{
		Handler:           br.HTTPHandler(&cfg.HTTP),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleConnTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	url := scheme + "://" + ln.Addr().String() + mcpbridge.HTTPPath
	log.Info("serving MCP over Streamable HTTP", "url", url, "version", version,
		"token", cfg.HTTP.Token != "", "console", cfg.HTTP.ConsoleToken != "", "max_sessions", cfg.HTTP.MaxSessions, "pool", cfg.Bridge.PoolSize)
	if ready != nil {
		ready(ln.Addr().String())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	pctx, stopPrepare := context.WithCancel(ctx)
	prepared := make(chan struct{})
	go func() { defer close(prepared); prepareImage(pctx, br, log) }()
	defer func() { stopPrepare(); <-prepared }()
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP server stopped", "err", err)
			return 1
		}
		return 0
	case <-ctx.Done():
	}
	// Stop: no new connections; the calls in flight get a grace period,
	// then every session ends (its calls are interrupted, its sandbox and
	// servers removed) and the connections close.
	// A second signal ends the grace at once.
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	drain := defaultDrain
	if cfg.DrainTimeout != 0 {
		drain = max(cfg.DrainTimeout, 0) // negative: no grace
	}
	log.Info("stopping: no new sessions; calls in flight may finish (a second signal ends them now)", "calls", br.CallsInFlight(), "grace", drain)
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	shut := make(chan struct{})
	go func() { srv.Shutdown(sctx); close(shut) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for br.CallsInFlight() > 0 && sctx.Err() == nil {
		select {
		case <-tick.C:
		case <-sctx.Done():
		case <-again:
			log.Warn("a second signal: ending every session now")
			cancel()
		}
	}
	if n := br.CallsInFlight(); n > 0 {
		log.Warn("ending sessions with calls still running; they are interrupted", "calls", n)
	}
	br.CloseSessions()
	br.Close()
	select {
	case <-shut:
	case <-time.After(time.Second):
	}
	srv.Close()
	log.Info("stopped")
	return 0
}
