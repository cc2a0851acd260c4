package servers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// CheckOptions configure Check. The zero value is ready to use.
type CheckOptions struct {
	// Timeout bounds starting one server and listing its tools. Zero:
	// 30 seconds.
	Timeout time.Duration
	// Concurrency is how many servers start at once. Zero: 4.
	Concurrency int
	// Version is the bridge's version, announced to the servers. Zero:
	// "dev".
	Version string
	// Logger receives the servers' progress and their stderr (at DEBUG).
	// Zero: discarded.
	Logger *slog.Logger
}

// A Report is how one configured server started.
type Report struct {
	// Server is the server's name and Source the file defining it.
	Server, Source string
	// Command is the server's command line, as configured, quoted as a
	// shell takes it.
	Command string
	// Tools is the number of tools the server listed.
	Tools int
	// Took is the time from starting the server to its tool list, or to
	// its failure.
	Took time.Duration
	// Err is why the server did not start or list its tools; nil when
	// it did.
	Err error
	// Stderr is the last lines the server wrote on its standard error,
	// joined by " | ".
	Stderr string
}

// stderrTailLines is how many lines of a server's stderr a Report keeps.
const stderrTailLines = 5

// Check starts every server r finds (as the bridge would proxy them),
// lists its tools and stops it, each within the timeout, a few at once,
// and reports on each in discovery order.
func Check(ctx context.Context, r *discovery.Registry, opts *CheckOptions) []Report {
	var o CheckOptions
	if opts != nil {
		o = *opts
	}
	o.Timeout = cmp.Or(o.Timeout, 30*time.Second)
	o.Concurrency = cmp.Or(o.Concurrency, 4)
	o.Version = cmp.Or(o.Version, "dev")
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	servers := r.Servers()
	out := make([]Report, len(servers))
	var g errgroup.Group
	g.SetLimit(o.Concurrency)
	for i, sc := range servers {
		g.Go(func() error {
			out[i] = checkServer(ctx, sc, o, log.With("server", sc.Name))
			return nil
		})
	}
	g.Wait()
	return out
}

// checkServer starts the server sc through an instance, as the bridge
// does, and stops it.
func checkServer(ctx context.Context, sc discovery.Server, o CheckOptions, log *slog.Logger) Report {
	rep := Report{Server: sc.Name, Source: sc.Source, Command: commandLine(sc)}
	tail := &engine.LineTail{Max: stderrTailLines}
	c := &instance{cfg: sc, version: o.Version, log: log, stderr: tail}
	defer c.close()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	began := time.Now()
	_, err := c.session(ctx)
	rep.Took = time.Since(began)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no tool list within %v: %w", o.Timeout, err)
		}
		rep.Err = err
	} else {
		c.mu.Lock()
		rep.Tools = len(c.tools)
		c.mu.Unlock()
	}
	rep.Stderr = tail.String()
	return rep
}

// commandLine returns the command line of sc as a shell would take it:
// words with spaces or shell characters in single quotes.
func commandLine(sc discovery.Server) string {
	words := slices.Concat([]string{sc.Command}, sc.Args)
	for i, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`;&|<>()*?[]{}!#~") {
			words[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(words, " ")
}
