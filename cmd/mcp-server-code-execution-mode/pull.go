package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// pullUsage is what `pull -h` prints above its flags.
var pullUsage = commandUsage{"[-image REF] [-timeout D]",
	"Pull the sandbox image (MCP_BRIDGE_IMAGE, or -image) on the engine the settings select,\n" +
		"showing its progress on stderr; nothing is done when it is present. run and serve\n" +
		"start the same pull when they start; a client's first call waits for it."}

// pullCommand pulls the sandbox image ahead of the first call.
func pullCommand(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("pull", flag.ContinueOnError)
	ref := fs.String("image", "", "the image to pull (default: MCP_BRIDGE_IMAGE, else the engine's default image)")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	if code, ok := parseFlags(fs, pullUsage, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: pull takes no arguments (got %q); -image names the image\n", fs.Args())
		return 2
	}
	fail := failer(stderr, "pull")
	cfg, err := config.Load(getenv)
	if err != nil {
		return fail(2, "%v", err)
	}
	image := *ref
	if image == "" {
		image = engine.Spec{Image: cfg.Session.Spec.Image}.WithDefaults().Image
	}
	log := cfg.Logger(stderr, slog.LevelWarn)
	eng := newEngine(cfg, log)
	defer eng.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	ens, err := engine.As[engine.ImageEnsurer](ctx, eng)
	if errors.Is(err, errors.ErrUnsupported) {
		return fail(2, "this engine pulls images itself (Kubernetes: the kubelet) or is several (MCP_BRIDGE_ENGINES): %v", err)
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	pp := newPullPrinter(stderr)
	began := time.Now()
	err = ens.EnsureImage(engine.WithPullWatcher(ctx, pp.watch), image)
	pp.end()
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "%s is present (%s)\n", image, time.Since(began).Round(time.Millisecond))
	return 0
}
