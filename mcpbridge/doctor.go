package mcpbridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A ConfigFileReport is what Registry.Check found in one configuration
// file it discovered.
type ConfigFileReport struct {
	// Path is the file.
	Path string
	// Err is why discovery skips the whole file: it cannot be read, is
	// too large, or does not parse; nil when it was read.
	Err error
	// Line and Column locate Err in the file, both from 1 (the column
	// in characters), when it is a syntax error with a position; else 0.
	Line, Column int
	// Servers are the servers the file contributes, in discovery order.
	Servers []string
	// Entries are the server entries of the file that discovery skips,
	// each with why.
	Entries []EntryReport
}

// An EntryReport is a server entry of a configuration file that discovery
// skips, and why.
type EntryReport struct {
	// Server is the entry's name.
	Server string
	// Err says why it is skipped.
	Err error
	// Benign is set when the entry is skipped by design, not because it
	// is malformed: a remote (url) server, an entry that would start this
	// bridge, a name a file read earlier defines.
	Benign bool
}

// Check reads every configuration file discovery finds, afresh, and
// reports for each what it contributes and what is wrong with it, in
// discovery order. Missing files are not reported.
func (r *Registry) Check() []ConfigFileReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ConfigFileReport
	defined := map[string]string{} // server name → the file defining it
	for _, src := range r.opts.sources() {
		for _, path := range r.expand(src) {
			fi, err := os.Stat(path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				continue
			case err != nil:
				out = append(out, ConfigFileReport{Path: path, Err: err})
				continue
			case !fi.Mode().IsRegular():
				out = append(out, ConfigFileReport{Path: path, Err: errors.New("not a regular file")})
				continue
			}
			rep := ConfigFileReport{Path: path}
			servers, err := r.parseFile(path, fi.Size(), src.project, func(server string, err error) {
				rep.Entries = append(rep.Entries, EntryReport{Server: server, Err: err, Benign: errors.Is(err, errRemoteServer)})
			})
			if err != nil {
				rep.Err = err
				var syn *syntaxError
				if errors.As(err, &syn) {
					rep.Err, rep.Line, rep.Column = syn.err, syn.line, syn.column
				}
			}
			for _, sc := range servers {
				switch first, ok := defined[sc.Name]; {
				case ok:
					rep.Entries = append(rep.Entries, EntryReport{Server: sc.Name, Benign: true,
						Err: fmt.Errorf("defined earlier in %s, which wins", first)})
				case !r.opts.AllowSelf && r.isSelf(sc):
					rep.Entries = append(rep.Entries, EntryReport{Server: sc.Name, Benign: true,
						Err: errors.New("it would start this bridge (MCP_BRIDGE_ALLOW_SELF_SERVER=1 allows it)")})
				default:
					defined[sc.Name] = path
					rep.Servers = append(rep.Servers, sc.Name)
				}
			}
			out = append(out, rep)
		}
	}
	return out
}

// ServerCheckOptions configure Registry.CheckServers. The zero value is
// ready to use.
type ServerCheckOptions struct {
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

// A ServerReport is how one configured server started.
type ServerReport struct {
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

// stderrTailLines is how many lines of a server's stderr a ServerReport
// keeps.
const stderrTailLines = 5

// CheckServers starts every server discovery finds (as the bridge would
// proxy them), lists its tools and stops it, each within the timeout, a
// few at once, and reports on each in discovery order.
func (r *Registry) CheckServers(ctx context.Context, opts *ServerCheckOptions) []ServerReport {
	var o ServerCheckOptions
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
	servers := r.servers()
	out := make([]ServerReport, len(servers))
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

// checkServer starts the server sc through a proxy client, as the bridge
// does, and stops it.
func checkServer(ctx context.Context, sc serverConfig, o ServerCheckOptions, log *slog.Logger) ServerReport {
	rep := ServerReport{Server: sc.Name, Source: sc.Source, Command: commandLine(sc)}
	tail := &engine.LineTail{Max: stderrTailLines}
	c := &proxyClient{cfg: sc, version: o.Version, log: log, stderr: tail}
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
func commandLine(sc serverConfig) string {
	words := slices.Concat([]string{sc.Command}, sc.Args)
	for i, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`;&|<>()*?[]{}!#~") {
			words[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(words, " ")
}
