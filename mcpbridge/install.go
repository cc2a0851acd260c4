package mcpbridge

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/egress"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/packages"
)

// installWindow is how long after answering runtime.install the bridge
// serves the connections of that sandbox's install endpoint: pip's run
// (the runtime bounds it to 15 minutes) and a margin. Outside it they are
// closed at once, so that code cannot use the endpoint to reach the
// indexes when no install runs.
const installWindow = 16 * time.Minute

// serveInstall returns the handler of cs's install endpoint: ic's, within
// installWindow of an install request of cs, else a closed connection.
func serveInstall(cs *clientSession, ic *egress.Client) func(net.Conn) {
	return func(c net.Conn) {
		if time.Now().UnixNano() > cs.installUntil.Load() {
			c.Close()
			return
		}
		ic.Serve(c)
	}
}

// errNoGateway reports an install asked of a bridge whose egress gateway,
// through which packages are fetched, is not running.
var errNoGateway = errors.New("packages are installed through the egress gateway, which is not running")

// installPlan answers runtime.install: each requirement checked (a name,
// extras, specifiers and a marker; no URL, path or pip option), pip's
// arguments for an install into the sandbox's own engine.SiteDir, and
// pip's wheel when the sandbox says it has none yet.
func (b *Bridge) installPlan(reqs []string, haveWheel bool) (map[string]any, error) {
	if b.egress == nil {
		return nil, errNoGateway
	}
	switch {
	case len(reqs) == 0:
		return nil, errors.New("runtime.install takes at least one requirement, such as \"requests\" or \"numpy>=1.26\"")
	case len(reqs) > packages.MaxRequirements:
		return nil, fmt.Errorf("runtime.install takes at most %d requirements at once; it was given %d", packages.MaxRequirements, len(reqs))
	}
	parsed := make([]packages.Requirement, 0, len(reqs))
	var names []string
	for _, s := range reqs {
		r, err := packages.Parse(s)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, r)
		names = append(names, r.String())
	}
	plan := map[string]any{
		"args":         b.opts.Packages.InstallArgs(engine.SiteDir, parsed),
		"target":       engine.SiteDir,
		"requirements": names,
	}
	if !haveWheel {
		name, data, err := b.opts.Packages.ReadWheel()
		if err != nil {
			return nil, err
		}
		plan["wheel_name"], plan["wheel"] = name, data
	}
	return plan, nil
}
