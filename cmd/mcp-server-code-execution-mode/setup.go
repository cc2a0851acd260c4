package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/term"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// defaultSetupName is the name of the bridge's entry in a client's
// configuration (-name).
const defaultSetupName = "code-execution"

// bridgeServersFile is the file of the state directory that moved servers
// go to.
const bridgeServersFile = "servers.json"

const setupUsage = `usage: mcp-server-code-execution-mode setup CLIENT [flags]

Writes the MCP configuration of CLIENT (claude-code, claude-desktop, cursor,
vscode) so that it starts this bridge: this binary's absolute path, "run".
Only the bridge's own entry is replaced; every other server and setting of
the file stays. The file as it was is kept as FILE.bak-mcp-code-exec (one
backup, replaced by the next); the new file is written atomically, with the
old one's permissions (0600 when new).

  claude-code     ~/.claude.json, "mcpServers" (user scope); through
                  "claude mcp add-json --scope user" when claude is on PATH
  claude-desktop  Claude/claude_desktop_config.json under ~/Library/Application
                  Support (macOS) or ~/.config (Linux), "mcpServers"
  cursor          ~/.cursor/mcp.json, "mcpServers"
  vscode          Code/User/mcp.json under ~/Library/Application Support
                  (macOS) or ~/.config (Linux), "servers"

No engine is written: the bridge detects Docker or Podman at each start, as
setup does now to tell which it will find (-runtime fixes one). The client's
other servers, which the bridge proxies, can move into the bridge's own
configuration (~/MCPs/servers.json, or MCP_BRIDGE_STATE_DIR's), out of the
client's, so that their tools' schemas leave the model's context: setup asks
on a terminal, else -move-servers moves them and -keep-servers (the default)
keeps them. A file with comments or trailing commas is rewritten (without
them) only with -force.

flags:
`

// setupOptions are where setup looks and what it runs. The zero value of
// each field is the process's own.
type setupOptions struct {
	// Home is the user's home directory. Zero: os.UserHomeDir.
	Home string
	// Cwd is the directory discovery takes as the project. Zero: the
	// working directory.
	Cwd string
	// GOOS picks the clients' file locations. Zero: runtime.GOOS.
	GOOS string
	// Executable is the bridge binary the entry starts. Zero:
	// os.Executable with symlinks resolved.
	Executable string
	// Terminal says stdin and stderr are terminals: setup may ask
	// questions. Zero: it never asks.
	Terminal bool
	// CheckEngine checks the engine the bridge will find with cfg, as
	// doctor's engine check does, and returns its results (one per
	// engine). Zero: doctorEngineCheck.
	CheckEngine func(ctx context.Context, cfg *config.Config, getenv func(string) string) []checkResult
}

// setupFlags are the command line's choices.
type setupFlags struct {
	name, runtime                     string
	env                               map[string]string
	dryRun, remove, move, keep, force bool
}

// A setupRun is one run of setup: the client, the choices, the bridge's
// settings and where it writes.
type setupRun struct {
	opts           setupOptions
	flags          setupFlags
	client         *setupClient
	getenv         func(string) string
	stdin          io.Reader
	stdout, stderr io.Writer
	// cfg is the bridge's settings (nil when they do not load);
	// discovery, where the bridge looks for servers.
	cfg       *config.Config
	discovery discovery.Options
}

// setupCommand writes a client's MCP configuration so that it starts the
// bridge; it exits 0 when done, 1 when a file could not be read or
// written, 2 on a usage error.
func setupCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return runSetup(ctx, args, stdin, stdout, stderr, getenv, &setupOptions{Terminal: isTerminal(stdin) && isTerminal(stderr)})
}

// isTerminal reports whether v is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// runSetup is setupCommand with its options.
func runSetup(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, opts *setupOptions) int {
	s := &setupRun{opts: *opts, getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	if code, ok := s.parse(args); !ok {
		return code
	}
	if err := s.fill(); err != nil {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: setup: %v\n", err)
		return 1
	}
	var err error
	if s.flags.remove {
		err = s.removeEntry(ctx)
	} else {
		err = s.addEntry(ctx)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: setup: %v\n", err)
		return 1
	}
	return 0
}

// parse reads the command line; it returns the exit code and false when
// setup stops there (-h, a usage error).
func (s *setupRun) parse(args []string) (int, bool) {
	fs := flag.NewFlagSet("setup", flag.ContinueOnError)
	fs.SetOutput(s.stderr)
	fs.Usage = func() {}
	f := &s.flags
	f.env = map[string]string{}
	fs.StringVar(&f.name, "name", defaultSetupName, "the bridge's server `NAME` in the client's configuration")
	fs.StringVar(&f.runtime, "runtime", "", "write MCP_BRIDGE_RUNTIME=`ENGINE` (docker, podman, kubernetes) into the entry; unset, the bridge detects its engine at each start")
	fs.Func("env", "add `KEY=VALUE` to the entry's env (repeatable), such as MCP_BRIDGE_IMAGE=…", func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return errors.New("want KEY=VALUE")
		}
		f.env[k] = val
		return nil
	})
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the change on stdout and write nothing")
	fs.BoolVar(&f.remove, "remove", false, "remove the bridge's entry (only it) from the client's configuration")
	fs.BoolVar(&f.move, "move-servers", false, "move the client's other servers into the bridge's configuration without asking")
	fs.BoolVar(&f.keep, "keep-servers", false, "keep the client's other servers where they are without asking")
	fs.BoolVar(&f.force, "force", false, "rewrite a file with comments or trailing commas, which are lost (the backup keeps them)")
	usage := func(w io.Writer) {
		fmt.Fprint(w, setupUsage)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(s.stderr)
	}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage(s.stdout)
				return 0, false
			}
			usage(s.stderr)
			return 2, false
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	bad := func(format string, a ...any) (int, bool) {
		fmt.Fprintf(s.stderr, "mcp-server-code-execution-mode: setup: "+format+"\n", a...)
		return 2, false
	}
	switch {
	case len(positional) == 0:
		fmt.Fprintln(s.stderr, "mcp-server-code-execution-mode: setup: which client? one of "+setupClientNames())
		usage(s.stderr)
		return 2, false
	case len(positional) > 1:
		return bad("one client at a time (got %q)", positional)
	case strings.TrimSpace(f.name) == "":
		return bad("-name: want a server name")
	case f.move && f.keep:
		return bad("-move-servers and -keep-servers: choose one")
	case f.remove && (f.move || f.runtime != "" || len(f.env) > 0):
		return bad("-remove removes the bridge's entry only; it takes none of -move-servers, -runtime, -env")
	}
	c, ok := findSetupClient(positional[0])
	if !ok {
		return bad("unknown client %q: want one of %s", positional[0], setupClientNames())
	}
	s.client = c
	if f.runtime != "" {
		if _, ok := f.env[config.EnvRuntime]; ok {
			return bad("-runtime and -env %s=…: choose one", config.EnvRuntime)
		}
		getenv := s.getenv
		s.getenv = func(k string) string {
			if k == config.EnvRuntime {
				return f.runtime
			}
			return getenv(k)
		}
		cfg, err := config.Load(s.getenv)
		if err != nil {
			return bad("-runtime %s: %v", f.runtime, err)
		}
		if cfg.Engine.Backend != "" { // auto: nothing to write
			f.env[config.EnvRuntime] = cfg.Engine.Backend
		}
	}
	return 0, true
}

// fill completes the options from the process, and loads the bridge's
// settings for discovery and the engine check.
func (s *setupRun) fill() error {
	o := &s.opts
	if o.Home == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("finding the home directory: %w", err)
		}
		o.Home = home
	}
	o.GOOS = cmp.Or(o.GOOS, runtime.GOOS)
	if o.Executable == "" {
		exe, err := os.Executable()
		if err == nil {
			exe, err = filepath.EvalSymlinks(exe)
		}
		if err != nil {
			return fmt.Errorf("finding this binary's path: %w", err)
		}
		o.Executable = exe
	}
	if o.CheckEngine == nil {
		o.CheckEngine = doctorEngineCheck
	}
	if cfg, err := config.Load(s.getenv); err == nil {
		s.cfg = cfg
		s.discovery = cfg.Bridge.Discovery
	} else if !s.flags.remove {
		fmt.Fprintf(s.stderr, "warning: the bridge's settings in this shell are invalid, and the bridge will not start with them: %v\n", err)
	}
	s.discovery.Home, s.discovery.Cwd = o.Home, o.Cwd
	s.discovery.Logger = slog.New(slog.DiscardHandler)
	return nil
}

// clientFile returns the client's configuration file, read.
func (s *setupRun) clientFile() (*configFile, error) {
	return readConfigFile(s.client.file(s.opts.Home, s.opts.GOOS, s.getenv))
}

// cli returns the client's own command when it has one and it is on PATH.
func (s *setupRun) cli() (*clientCLI, bool) {
	if s.client.cli == "" {
		return nil, false
	}
	p, ok := lookPathIn(s.client.cli, s.getenv("PATH"))
	if !ok {
		return nil, false
	}
	return &clientCLI{path: p, home: s.opts.Home}, true
}

// checkRewrite refuses to rewrite a file with comments unless -force.
func (s *setupRun) checkRewrite(f *configFile) error {
	if f.jsonc && !s.flags.force {
		return fmt.Errorf("not rewriting %s: %w; add the entry by hand, or run again with -force (the backup %s keeps the file as it is)",
			f.path, ErrConfigComments, f.backupPath())
	}
	return nil
}

// addEntry writes the bridge's entry into the client's configuration,
// after saying which engine the bridge will find, and moves the client's
// other servers when asked to.
func (s *setupRun) addEntry(ctx context.Context) error {
	f, err := s.clientFile()
	if err != nil {
		return err
	}
	cli, viaCLI := s.cli()
	if !viaCLI && !s.flags.dryRun {
		if err := s.checkRewrite(f); err != nil {
			return err
		}
	}
	table, err := f.doc.object(s.client.table)
	if err != nil {
		return fmt.Errorf("reading %s: %w", f.path, err)
	}
	entry := s.client.entry(s.opts.Executable, s.flags.env)
	old, had := table.get(s.flags.name)
	unchanged := had && sameJSON(old, entry)

	s.reportEngine(ctx)
	s.noteUnseenEnv()
	s.noteOtherBridges(table)
	others := s.otherServers(f, table)
	moving := s.decideMove(others)

	if s.flags.dryRun {
		s.printPlan(f, cli, entry, had, unchanged, moving)
		return nil
	}
	if len(moving) > 0 {
		if err := s.moveServers(ctx, f, table, cli, moving); err != nil {
			return err
		}
	}
	switch {
	case unchanged && (viaCLI || len(moving) == 0):
		fmt.Fprintf(s.stderr, "%s already starts the bridge as %q (%s); nothing else to change\n", s.client.title, s.flags.name, f.path)
		return nil
	case had && !unchanged:
		fmt.Fprintf(s.stderr, "replacing %q of %s, which started: %s\n", s.flags.name, f.path, describeEntry(old))
	}
	if viaCLI {
		if had {
			if _, err := cli.run(ctx, removeArgs(s.flags.name)...); err != nil {
				return err
			}
		}
		if _, err := cli.run(ctx, addArgs(s.flags.name, entry)...); err != nil {
			return err
		}
		fmt.Fprintf(s.stderr, "added %q to %s's user configuration (%s) with %s\n", s.flags.name, s.client.title, f.path,
			cli.commandLine(addArgs(s.flags.name, entry)...))
	} else {
		table.set(s.flags.name, entry)
		f.doc.setObject(s.client.table, table)
		backup, err := f.write(f.doc)
		if err != nil {
			return err
		}
		fmt.Fprintf(s.stderr, "wrote %q to %s%s\n", s.flags.name, f.path, backupWords(backup))
	}
	fmt.Fprintf(s.stderr, "restart %s (or reload its MCP servers) to start the bridge\n", s.client.title)
	return nil
}

// removeEntry removes the bridge's entry, and only it, from the client's
// configuration.
func (s *setupRun) removeEntry(ctx context.Context) error {
	f, err := s.clientFile()
	if err != nil {
		return err
	}
	table, err := f.doc.object(s.client.table)
	if err != nil {
		return fmt.Errorf("reading %s: %w", f.path, err)
	}
	old, had := table.get(s.flags.name)
	if !had {
		fmt.Fprintf(s.stderr, "%s has no server %q (%s); nothing to remove\n", s.client.title, s.flags.name, f.path)
		return nil
	}
	cli, viaCLI := s.cli()
	if s.flags.dryRun {
		if viaCLI {
			fmt.Fprintf(s.stdout, "would run: %s\n", cli.commandLine(removeArgs(s.flags.name)...))
		} else {
			fmt.Fprintf(s.stdout, "would remove %q (%s) from %s (%q)%s\n", s.flags.name, describeEntry(old), f.path,
				s.client.table, s.jsoncWords(f))
		}
		return nil
	}
	if viaCLI {
		if _, err := cli.run(ctx, removeArgs(s.flags.name)...); err != nil {
			return err
		}
		fmt.Fprintf(s.stderr, "removed %q from %s's user configuration with %s\n", s.flags.name, s.client.title,
			cli.commandLine(removeArgs(s.flags.name)...))
		return nil
	}
	if err := s.checkRewrite(f); err != nil {
		return err
	}
	table.remove(s.flags.name)
	f.doc.setObject(s.client.table, table)
	backup, err := f.write(f.doc)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.stderr, "removed %q from %s%s\n", s.flags.name, f.path, backupWords(backup))
	return nil
}

// backupWords says where the old file was kept.
func backupWords(backup string) string {
	if backup == "" {
		return " (a new file)"
	}
	return " (the old file is kept as " + backup + ")"
}

// jsoncWords warns, in a plan, that the file would be refused.
func (s *setupRun) jsoncWords(f *configFile) string {
	if !f.jsonc {
		return ""
	}
	if s.flags.force {
		return "; its comments and trailing commas would be lost (-force)"
	}
	return "; but it has comments or trailing commas: without -force, setup would refuse to rewrite it"
}

// printPlan prints on stdout what addEntry would change.
func (s *setupRun) printPlan(f *configFile, cli *clientCLI, entry []byte, had, unchanged bool, moving []string) {
	w := s.stdout
	if len(moving) > 0 {
		fmt.Fprintf(w, "would move %s into %s (%q) and out of %s\n", strings.Join(moving, ", "), s.bridgeFile(), "mcpServers", f.path)
		if cli != nil {
			for _, name := range moving {
				fmt.Fprintf(w, "would run: %s\n", cli.commandLine(removeArgs(name)...))
			}
		}
	}
	switch {
	case unchanged:
		fmt.Fprintf(w, "%s already starts the bridge as %q (%s); nothing to change\n", s.client.title, s.flags.name, f.path)
		return
	case cli != nil:
		if had {
			fmt.Fprintf(w, "would run: %s\n", cli.commandLine(removeArgs(s.flags.name)...))
		}
		fmt.Fprintf(w, "would run: %s\n", cli.commandLine(addArgs(s.flags.name, entry)...))
		return
	}
	verb := "add"
	if had {
		verb = "replace"
	}
	backup := ""
	if f.exists {
		backup = ", keeping the old file as " + f.backupPath()
	}
	fmt.Fprintf(w, "would %s %q in %s (%q)%s%s:\n", verb, s.flags.name, f.path, s.client.table, backup, s.jsoncWords(f))
	one := newJSONObject()
	one.set(s.flags.name, entry)
	w.Write(one.indented())
}

// reportEngine says on stderr which engine the bridge will find, or warns
// that none answers, with the fix.
func (s *setupRun) reportEngine(ctx context.Context) {
	if s.cfg == nil {
		return
	}
	how := "detected now from this shell's environment; no engine is written, so the bridge detects its own at each start"
	if s.flags.env[config.EnvRuntime] != "" {
		how = config.EnvRuntime + "=" + s.flags.env[config.EnvRuntime] + " is written into the entry"
	}
	for _, r := range s.opts.CheckEngine(ctx, s.cfg, s.getenv) {
		if r.Status == statusOK {
			fmt.Fprintf(s.stderr, "engine: the bridge will use %s (%s)\n", r.Detail, how)
			continue
		}
		fmt.Fprintf(s.stderr, "warning: no container engine answers: %s\n  fix: %s\n  (the configuration is written all the same; `mcp-server-code-execution-mode doctor` checks the whole setup)\n",
			r.Detail, cmp.Or(r.Hint, engineHint))
	}
}

// doctorEngineCheck is doctor's engine check (engineCheck) of the engine
// cfg selects, or of each engine of MCP_BRIDGE_ENGINES: it connects and
// describes the engine, starting nothing.
func doctorEngineCheck(ctx context.Context, cfg *config.Config, getenv func(string) string) []checkResult {
	var results []checkResult
	d := &doctor{getenv: getenv, stderr: io.Discard, newEngine: newDoctorEngine,
		report: func(r checkResult) { results = append(results, r) }}
	d.log = cfg.Logger(io.Discard, slog.LevelWarn)
	cfgs := []*config.Config{cfg}
	if len(cfg.Engines) > 0 {
		cfgs = nil
		for _, ep := range cfg.Engines {
			one := *cfg
			one.Engines = nil
			one.Engine.Backend, one.Engine.Address, one.Engine.CertPath = ep.Backend, ep.Address, ep.CertPath
			one.Engine.Context = ep.Context
			cfgs = append(cfgs, &one)
		}
	}
	for _, c := range cfgs {
		eng, closeEngine := d.newEngine(c, d.log)
		d.engineCheck(ctx, c, eng)
		closeEngine()
	}
	return results
}

// unseenEnv are the variables of this shell that change what the bridge
// finds, and that a client started from the desktop does not pass on.
var unseenEnv = []string{config.EnvImage, config.EnvEngines, config.EnvStateDir, config.EnvServersConfig,
	"DOCKER_HOST", "DOCKER_CONTEXT", "CONTAINER_HOST", "CONTAINER_CONNECTION"}

// noteUnseenEnv tells of the variables of unseenEnv set in this shell but
// not in the entry, for the clients started from the desktop.
func (s *setupRun) noteUnseenEnv() {
	if s.client.cli != "" { // Claude Code runs in the shell, and passes its environment on
		return
	}
	var set []string
	for _, k := range unseenEnv {
		if _, ok := s.flags.env[k]; !ok && s.getenv(k) != "" {
			set = append(set, k)
		}
	}
	if len(set) > 0 {
		fmt.Fprintf(s.stderr, "note: this shell sets %s, which %s started from the desktop does not see; to keep a setting, run again with -env, such as -env %s=%s\n",
			strings.Join(set, ", "), s.client.title, set[0], s.getenv(set[0]))
	}
}

// noteOtherBridges tells of the other entries of the table that start
// the bridge too: setup replaces only its own.
func (s *setupRun) noteOtherBridges(table *jsonObject) {
	for _, name := range table.keys {
		if name == s.flags.name {
			continue
		}
		var e struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		}
		if json.Unmarshal(table.vals[name], &e) != nil {
			continue
		}
		self := e.Command == s.opts.Executable
		for _, w := range append([]string{e.Command}, e.Args...) {
			self = self || strings.Contains(w, discovery.ImplementationName)
		}
		if self {
			fmt.Fprintf(s.stderr, "note: %q starts the bridge too (%s); setup changes only %q: remove %q if it is a leftover\n",
				name, describeEntry(table.vals[name]), s.flags.name, name)
		}
	}
}

// otherServers lists on stderr the client's other servers, those the
// bridge finds in the client's file and proxies (what discovery takes
// from it, less the bridge itself), and returns the ones of the table
// that could move.
func (s *setupRun) otherServers(f *configFile, table *jsonObject) []string {
	var rep discovery.ConfigFileReport
	for _, r := range discovery.NewRegistry(s.discovery).Check() {
		if r.Path == f.path {
			rep = r
		}
	}
	var movable []string
	for _, name := range rep.Servers {
		if _, ok := table.get(name); ok && name != s.flags.name {
			movable = append(movable, name)
		}
	}
	// The others stay, and why: the bridge does not take them from this
	// file (a name defined earlier, a remote server, a malformed entry).
	for _, e := range rep.Entries {
		if _, ok := table.get(e.Server); ok && e.Server != s.flags.name && !slices.Contains(rep.Servers, e.Server) {
			fmt.Fprintf(s.stderr, "%s's server %q stays: the bridge does not take it from %s (%v)\n", s.client.title, e.Server, f.path, e.Err)
		}
	}
	if len(movable) == 0 {
		fmt.Fprintf(s.stderr, "%s has no other servers for the bridge to proxy\n", s.client.title)
		return nil
	}
	fmt.Fprintf(s.stderr, "%s's other servers, which the bridge proxies: %s\n", s.client.title, strings.Join(movable, ", "))
	return movable
}

// bridgeFile is the bridge's own configuration file that moved servers
// go to.
func (s *setupRun) bridgeFile() string {
	return filepath.Join(discovery.NewRegistry(s.discovery).StateDir(), bridgeServersFile)
}

// decideMove returns the servers to move: all of others when
// -move-servers says so or the user answers yes on a terminal, none with
// -keep-servers or away from a terminal (with a hint of the flag).
func (s *setupRun) decideMove(others []string) []string {
	switch {
	case len(others) == 0 || s.flags.keep:
		return nil
	case s.flags.move:
		return others
	case !s.opts.Terminal || s.flags.dryRun:
		fmt.Fprintf(s.stderr, "hint: -move-servers moves them into %s, out of %s's configuration, so that their tools' schemas leave the model's context; the bridge still proxies them\n",
			s.bridgeFile(), s.client.title)
		return nil
	}
	fmt.Fprintf(s.stderr, "Move them into %s and out of %s's configuration? The bridge still proxies them, and their tools' schemas leave the model's context. [y/N] ",
		s.bridgeFile(), s.client.title)
	line, _ := bufio.NewReader(s.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return others
	}
	return nil
}

// moveServers copies the named entries of the client's table into the
// bridge's file (replacing entries of the same names there), then takes
// them out of the client's configuration: with its CLI, or out of table,
// written by addEntry with the bridge's entry.
func (s *setupRun) moveServers(ctx context.Context, f *configFile, table *jsonObject, cli *clientCLI, names []string) error {
	bf, err := readConfigFile(s.bridgeFile())
	if err != nil {
		return err
	}
	if err := s.checkRewrite(bf); err != nil {
		return err
	}
	dest, err := bf.doc.object("mcpServers")
	if err != nil {
		return fmt.Errorf("reading %s: %w", bf.path, err)
	}
	for _, name := range names {
		if old, ok := dest.get(name); ok && !sameJSON(old, table.vals[name]) {
			fmt.Fprintf(s.stderr, "replacing %q of %s, which started: %s\n", name, bf.path, describeEntry(old))
		}
		dest.set(name, table.vals[name])
	}
	bf.doc.setObject("mcpServers", dest)
	backup, err := bf.write(bf.doc)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.stderr, "copied %s into %s%s\n", strings.Join(names, ", "), bf.path, backupWords(backup))
	for _, name := range names {
		if cli != nil {
			if _, err := cli.run(ctx, removeArgs(name)...); err != nil {
				return err
			}
		}
		table.remove(name)
	}
	if cli != nil {
		fmt.Fprintf(s.stderr, "removed %s from %s with %s\n", strings.Join(names, ", "), f.path, cli.commandLine(removeArgs("NAME")...))
	}
	return nil
}
