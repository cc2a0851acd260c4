package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// resolveTimeout bounds resolving one name of the network section.
const resolveTimeout = 5 * time.Second

// A resolver looks up host names (net.Resolver is one; tests give a fake).
type resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// checkNetwork reports the tool policy's network section, as the egress
// gateway will read it: whether the policy parses, what the section
// holds, and for each name an allow entry names, the addresses it
// resolves to and whether the gateway would dial them.
func (d *doctor) checkNetwork(ctx context.Context, cfg *config.Config) {
	began := time.Now()
	stateDir := discovery.NewRegistry(cfg.Bridge.Discovery).StateDir()
	file := policy.Open(cfg.Bridge.PolicyFile, stateDir, d.log)
	p, err := file.Current()
	r := checkResult{Check: "network", Status: statusOK, File: file.Path()}
	if err != nil {
		r.Status, r.Detail = statusFail, err.Error()
		r.Hint = "fix the policy file: while it is broken, every connection from sandboxes (and every proxied call) is refused"
		r.DurationMS = sinceMS(began)
		d.report(r)
		return
	}
	n := p.Network()
	res := d.resolver
	if res == nil {
		res = net.DefaultResolver
	}
	var lines, refused []string
	for _, t := range n.NamedTargets() {
		target := net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
		lctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		addrs, err := res.LookupNetIP(lctx, "ip", t.Host)
		cancel()
		if err != nil {
			refused = append(refused, fmt.Sprintf("%s does not resolve: %v", target, err))
			continue
		}
		var ok []string
		for _, a := range addrs {
			if dec := n.CheckAddr(t.Host, t.Port, a.Unmap()); !dec.Allowed {
				refused = append(refused, fmt.Sprintf("%s (%s) would be refused: %s", target, a.Unmap(), dec.Reason))
			} else {
				ok = append(ok, a.Unmap().String())
			}
		}
		if len(ok) > 0 {
			lines = append(lines, target+" → "+strings.Join(ok, ", "))
		}
	}
	r.Detail = n.Summary()
	if len(lines) > 0 {
		r.Detail += "; reachable: " + strings.Join(lines, "; ")
	}
	if len(refused) > 0 {
		r.Status = statusWarn
		r.Detail += "; " + strings.Join(refused, "; ")
		r.Hint = "an allowed name whose addresses the gateway refuses (a private or special address) needs an allow entry naming the address or a CIDR holding it"
	}
	if len(n.DisabledInject()) > 0 {
		// Summary named them: the rest of the policy works, their hosts
		// are refused.
		r.Status = statusWarn
		r.Hint = strings.TrimPrefix(r.Hint+"; ", "; ") + "an inject rule whose ${NAME} is unset or empty is disabled and its host refused: " +
			"set the variable in the environment the bridge starts with (the client's entry's env), then restart it"
	}
	r.DurationMS = sinceMS(began)
	d.report(r)
}
