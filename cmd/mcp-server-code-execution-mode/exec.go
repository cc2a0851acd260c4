package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// maxExecCode bounds the code read from stdin.
const maxExecCode = 16 << 20

// execCommand runs one snippet in a fresh hardened sandbox.
func execCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	code := fs.String("c", "", "Python code to run (default: read from stdin)")
	timeout := fs.Duration("timeout", 30*time.Second, "kill the sandbox after this long (0: no limit)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: exec: "+format+"\n", a...)
		return 125
	}
	log, err := newLogger(stderr, getenv, slog.LevelWarn)
	if err != nil {
		return fail("%v", err)
	}
	settings, err := engine.LoadSettings(getenv)
	if err != nil {
		return fail("%v", err)
	}
	src := *code
	if !isFlagSet(fs, "c") {
		b, err := io.ReadAll(io.LimitReader(stdin, maxExecCode+1))
		if err != nil {
			return fail("reading code from stdin: %v", err)
		}
		if len(b) > maxExecCode {
			return fail("code on stdin exceeds %d bytes", maxExecCode)
		}
		src = string(b)
	}

	rt := engine.NewRuntime(&engine.RuntimeOptions{Runtime: settings.Runtime, Logger: log})
	defer rt.Close()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	// python3 reads the whole program from stdin, then runs it.
	sb, err := rt.Start(ctx, settings.Spec("exec", []string{"python3", "-u", "-"}))
	if err != nil {
		return fail("%v", err)
	}
	defer sb.Close()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); io.Copy(stdout, sb.Stdout()) }()
	go func() { defer wg.Done(); io.Copy(stderr, sb.Stderr()) }()
	go func() {
		io.WriteString(sb.Stdin(), src)
		sb.Stdin().Close()
	}()

	status, err := sb.Wait(ctx)
	if err != nil {
		sb.Close()
		wg.Wait()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return failCode(stderr, 124, "timed out after %s; the sandbox was removed", *timeout)
		}
		if ctx.Err() != nil {
			return failCode(stderr, 130, "interrupted; the sandbox was removed")
		}
		return fail("%v", err)
	}
	wg.Wait()
	if status.OOMKilled || status.Signal() != 0 || status.EngineError != "" {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: exec: %v\n", status.Err())
	}
	return status.Code
}

func failCode(w io.Writer, code int, format string, a ...any) int {
	fmt.Fprintf(w, "mcp-server-code-execution-mode: exec: "+format+"\n", a...)
	return code
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
