package discovery

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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
