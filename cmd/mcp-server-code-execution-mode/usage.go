package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// A commandUsage is what a command's -h prints above its flags: how the
// command is called and what it does.
type commandUsage struct {
	synopsis string // the arguments after the command's name
	about    string // one or a few lines
}

// The usage of each command.
var (
	execUsage = commandUsage{"[-c CODE | -f FILE] [-out DIR] [-json] [-timeout D]",
		"Run Python code (from -c, -f FILE, else stdin; -f -: stdin) in a fresh hardened sandbox,\n" +
			"print its output and exit with its status."}
	runUsage = commandUsage{"",
		"Serve MCP over stdio (the run_python tool); logs go to stderr."}
	serveUsage = commandUsage{"-http ADDR [-tls-cert F -tls-key F]",
		"Serve MCP over Streamable HTTP at ADDR/mcp, one sandbox per session\n" +
			"(MCP_BRIDGE_HTTP_TOKEN is needed beyond loopback)."}
	doctorUsage = commandUsage{"[-json] [-timeout D]",
		"Check the setup: the settings, the engine, the image, a hardened probe container,\n" +
			"its OCI runtime, the MCP server configuration files and servers; exit 1 when a check fails."}
	versionUsage = commandUsage{"", "Print the version."}
)

// settingsPointer ends every command's usage.
const settingsPointer = "Settings come from MCP_BRIDGE_* environment variables: docs/SETTINGS.md lists them,\n" +
	"doctor shows those set.\n"

// parseFlags parses args into fs, named after its command. Asked for
// help (-h, -help), it prints the command's usage on stdout and returns
// 0 and false; given a flag it does not define, it says so on stderr
// with the usage and returns 2 and false. Otherwise it returns true.
func parseFlags(fs *flag.FlagSet, u commandUsage, args []string, stdout, stderr io.Writer) (int, bool) {
	fs.SetOutput(io.Discard) // the errors and usage are printed here
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		printUsage(stdout, fs, u)
		return 0, false
	default:
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: %s: %v\n", fs.Name(), err)
		printUsage(stderr, fs, u)
		return 2, false
	}
}

// printUsage writes the usage of fs's command to w: its synopsis, what it
// does, its flags and their defaults.
func printUsage(w io.Writer, fs *flag.FlagSet, u commandUsage) {
	synopsis := strings.TrimSpace("mcp-server-code-execution-mode " + fs.Name() + " " + u.synopsis)
	fmt.Fprintf(w, "usage: %s\n\n%s\n", synopsis, u.about)
	var flags strings.Builder
	fs.SetOutput(&flags)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	if flags.Len() > 0 {
		fmt.Fprintf(w, "\nflags:\n%s", flags.String())
	}
	fmt.Fprintf(w, "\n%s", settingsPointer)
}

// failer returns the function a command reports an error with: it
// prints "mcp-server-code-execution-mode: CMD: " and the message on
// stderr, and returns code, the command's exit status.
func failer(stderr io.Writer, cmd string) func(code int, format string, a ...any) int {
	return func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: "+cmd+": "+format+"\n", a...)
		return code
	}
}
