package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// maxExecCode bounds the code read from stdin.
const maxExecCode = 16 << 20

// Exit codes of exec besides the code's own.
const (
	exitBridgeFailure = 125 // bad setting, no engine, sandbox failure
	exitTimeout       = 124
	exitInterrupted   = 130
)

// execCommand runs one snippet in a fresh hardened sandbox session.
func execCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	code := fs.String("c", "", "Python code to run (default: read from stdin)")
	file := fs.String("f", "", "read the Python code from this file (- for stdin)")
	outDir := fs.String("out", "", "save the result's images (image-N.png, …) and its files of /workspace/out (at their path) under this directory")
	asJSON := fs.Bool("json", false, "print the whole result as one JSON object instead of the output as it comes")
	timeout := fs.Duration("timeout", 30*time.Second, "interrupt the code after this long (0: no limit)")
	if code, ok := parseFlags(fs, execUsage, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: exec: unexpected arguments %q (the code comes from -c, -f FILE or stdin)\n", fs.Args())
		return 2
	}
	if isFlagSet(fs, "c") && isFlagSet(fs, "f") {
		fmt.Fprintln(stderr, "mcp-server-code-execution-mode: exec: -c and -f both give the code: use one")
		return 2
	}
	fail := failer(stderr, "exec")
	cfg, err := config.Load(getenv)
	if err != nil {
		return fail(exitBridgeFailure, "%v", err)
	}
	log := cfg.Logger(stderr, slog.LevelWarn)
	if len(cfg.Bridge.Packages.Requirements) > 0 {
		// exec's sandbox has no egress gateway, through which sets install.
		log.Warn("exec does not install or mount the package set (MCP_BRIDGE_PACKAGES); run and serve do")
	}
	src := *code
	if !isFlagSet(fs, "c") {
		from, name := stdin, "stdin"
		if *file != "" && *file != "-" {
			f, err := os.Open(*file)
			if err != nil {
				return fail(exitBridgeFailure, "reading the code: %v", err)
			}
			defer f.Close()
			from, name = f, *file
		}
		b, err := io.ReadAll(io.LimitReader(from, maxExecCode+1))
		if err != nil {
			return fail(exitBridgeFailure, "reading code from %s: %v", name, err)
		}
		if len(b) > maxExecCode {
			return fail(exitBridgeFailure, "code in %s exceeds %d bytes", name, maxExecCode)
		}
		src = string(b)
	}

	eng := newEngine(cfg, log)
	defer eng.Close()
	opts := cfg.Session
	opts.Spec.Session = "exec"
	opts.Logger = log
	opts.IdleTimeout = -1
	sess := entrypoint.New(eng, &opts)
	defer sess.Close()
	call := &entrypoint.Call{Code: src, Timeout: *timeout}
	if !*asJSON {
		// Output is printed as it arrives.
		call.OnOutput = func(stream, data string) {
			if stream == "stdout" {
				io.WriteString(stdout, data)
			} else {
				io.WriteString(stderr, data)
			}
		}
	}
	pp := newPullPrinter(stderr) // a first pull shows how it goes
	res, err := sess.Run(engine.WithPullWatcher(ctx, pp.watch), call)
	pp.end()
	if res != nil && res.Truncated && !*asJSON {
		fail(0, "output beyond the cap per stream was not shown (%s)", config.EnvMaxOutput)
	}
	if res != nil && err == nil {
		var saved savedResult
		if *outDir != "" {
			if saved, err = saveOutputs(ctx, *outDir, res, sess.OpenFile); err != nil {
				return fail(exitBridgeFailure, "%v", err)
			}
			for _, e := range saved.errs {
				fail(0, "not saved: %s", e)
			}
		} else if !*asJSON {
			unsaved(stderr, res)
		}
		if *asJSON {
			if err := writeJSON(stdout, res, saved); err != nil {
				return fail(exitBridgeFailure, "writing the result: %v", err)
			}
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return fail(exitInterrupted, "interrupted")
	case err != nil:
		var exit *engine.ExitError
		if errors.As(err, &exit) && exit.Status.Code != 0 {
			return fail(exit.Status.Code, "%v", err)
		}
		return fail(exitBridgeFailure, "%v", err)
	}
	switch res.Status {
	case entrypoint.StatusSuccess:
		return 0
	case entrypoint.StatusExit:
		return res.ExitCode
	case entrypoint.StatusTimeout:
		if *asJSON {
			return exitTimeout
		}
		return fail(exitTimeout, "timed out: %s", res.Notice)
	default:
		if !*asJSON {
			io.WriteString(stderr, res.Traceback)
		}
		return 1
	}
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
