// Package policy is the tool policy: what code in the sandbox may do with
// the proxied MCP servers, as the operator's policy file says (servers it
// may load, tools that exist, tools a person must confirm, the bound of
// proxied calls, the argument keys audit records hide), and the file,
// read again whenever it changes.
package policy

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of a policy file, so that a huge or hostile one is refused, not
// worked through.
const (
	maxPolicyBytes    = 1 << 20 // the file
	maxPolicyServers  = 1000    // entries under "servers"
	maxPolicyPatterns = 1000    // globs in one list
	maxPatternLen     = 256     // bytes of one glob
)

// defaultMaxToolCalls bounds the proxied calls of one run_python call when
// the policy does not say.
const defaultMaxToolCalls = 1000

// Values of confirm_without_elicitation.
const (
	confirmRefuse = "refuse"
	confirmAllow  = "allow"
)

// defaultRedactKeys are the argument keys (globs, matched without regard
// to case) whose values an audit record never shows.
var defaultRedactKeys = []string{"password", "passwd", "*secret*", "*token*", "api_key", "apikey", "authorization", "*credential*", "private_key"}

// A Policy is what code may do with the proxied servers, as the policy
// file says. Its zero value allows everything, within the default bound
// of proxied calls per run_python call; so does a nil *Policy, whose
// methods all work.
type Policy struct {
	// Servers holds a rule per server name or glob.
	Servers map[string]*ServerRule `json:"servers"`
	// MaxToolCalls bounds the proxied calls of one run_python call.
	// Zero: 1,000.
	MaxToolCalls int `json:"max_tool_calls"`
	// ConfirmWithoutElicitation is what a confirm rule does for a client
	// that cannot be asked: "refuse" (zero) or "allow".
	ConfirmWithoutElicitation string `json:"confirm_without_elicitation"`
	// ConfirmVia says who answers a confirm rule's question: "client"
	// (the MCP client's user, by elicitation) and "console" (an operator
	// on the console); the first answer wins. A server rule's own list
	// wins over this one. Zero: ["client"]. See ConfirmBy.
	ConfirmVia []string `json:"confirm_via"`
	// RedactKeys adds argument keys (globs) to those whose values audit
	// records hide.
	RedactKeys []string `json:"redact_keys"`
	// NetworkSection is the "network" section as written (see
	// network.go); Network gives it parsed.
	NetworkSection *NetworkSection `json:"network"`

	source  string   // the file, for messages
	network *Network // NetworkSection parsed, nil without one
}

// A ServerRule is the policy of the servers an entry of "servers" names.
type ServerRule struct {
	// Load false forbids loading the server at all; it is not listed.
	Load *bool `json:"load"`
	// Allow, when given, lists the only tools that exist.
	Allow []string `json:"allow"`
	// Deny lists tools that do not exist; deny wins over allow.
	Deny []string `json:"deny"`
	// Confirm lists tools a person must accept before each call.
	Confirm []string `json:"confirm"`
	// ConfirmVia, when given, is who answers the confirm questions of
	// these servers' tools, in place of the policy's ConfirmVia.
	ConfirmVia []string `json:"confirm_via"`

	key string // its key under "servers"
}

// match reports the first glob of globs that name matches, if one does.
func match(globs []string, name string) (string, bool) {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return g, true
		}
	}
	return "", false
}

// RuleFor returns the rule of server: the entry named exactly so, else
// the most specific glob that matches it (the longest; on a tie, the first
// in byte order); nil when none does.
func (p *Policy) RuleFor(server string) *ServerRule {
	if p == nil {
		return nil
	}
	if r, ok := p.Servers[server]; ok {
		return r
	}
	var keys []string
	for k := range p.Servers {
		if ok, _ := path.Match(k, server); ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) > len(keys[j])
		}
		return keys[i] < keys[j]
	})
	return p.Servers[keys[0]]
}

// A Kind is what a verdict lets a call of the tool do.
type Kind int

// Verdicts of a policy on a tool.
const (
	Allow   Kind = iota // the tool exists and runs
	Deny                // the tool does not exist
	Confirm             // a person must accept each call
)

// A Verdict is what the policy says of one tool, and which rule says it.
type Verdict struct {
	Kind Kind
	Rule string // e.g. servers["github"].deny "delete_*"
}

// MayLoad reports whether server may be loaded, or the rule that forbids it.
func (p *Policy) MayLoad(server string) (bool, string) {
	r := p.RuleFor(server)
	if r != nil && r.Load != nil && !*r.Load {
		return false, fmt.Sprintf("servers[%q].load is false", r.key)
	}
	return true, ""
}

// Decide returns the verdict on tool of server: deny wins, then a tool
// outside a given allow list does not exist, then confirm.
func (p *Policy) Decide(server, tool string) Verdict {
	if ok, rule := p.MayLoad(server); !ok {
		return Verdict{Deny, rule}
	}
	r := p.RuleFor(server)
	if r == nil {
		return Verdict{Kind: Allow}
	}
	if g, ok := match(r.Deny, tool); ok {
		return Verdict{Deny, fmt.Sprintf("servers[%q].deny %q", r.key, g)}
	}
	if r.Allow != nil {
		if _, ok := match(r.Allow, tool); !ok {
			return Verdict{Deny, fmt.Sprintf("servers[%q].allow lists no glob it matches", r.key)}
		}
	}
	if g, ok := match(r.Confirm, tool); ok {
		return Verdict{Confirm, fmt.Sprintf("servers[%q].confirm %q", r.key, g)}
	}
	return Verdict{Kind: Allow}
}

// CallLimit is the bound of proxied calls per run_python call.
func (p *Policy) CallLimit() int {
	if p == nil || p.MaxToolCalls == 0 {
		return defaultMaxToolCalls
	}
	return p.MaxToolCalls
}

// ConfirmUnasked reports whether a confirm tool runs for a client that
// cannot be asked (confirm_without_elicitation is "allow").
func (p *Policy) ConfirmUnasked() bool {
	return p != nil && p.ConfirmWithoutElicitation == confirmAllow
}

// Redacts reports whether an argument called key is hidden in audit
// records: a default key (password, *token*, …) or one of redact_keys,
// matched without regard to case.
func (p *Policy) Redacts(key string) bool {
	k := strings.ToLower(key)
	if _, ok := match(defaultRedactKeys, k); ok {
		return true
	}
	if p == nil {
		return false
	}
	for _, g := range p.RedactKeys {
		if ok, _ := path.Match(strings.ToLower(g), k); ok {
			return true
		}
	}
	return false
}

// Visible returns the tools of server that exist under the policy: those
// not denied, and within its allow list when it has one.
func (p *Policy) Visible(server string, tools []*mcp.Tool) []*mcp.Tool {
	if p.RuleFor(server) == nil {
		return tools
	}
	out := make([]*mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if p.Decide(server, t.Name).Kind != Deny {
			out = append(out, t)
		}
	}
	return out
}

// SourceNote names the policy file for a message, which sandbox code
// may see: " (in NAME)", its base name (where it is, is the operator's:
// the log says it), or "" without one.
func (p *Policy) SourceNote() string {
	if p == nil || p.source == "" {
		return ""
	}
	return " (in " + path.Base(p.source) + ")"
}

// Network returns the network section of p, parsed. Never nil: without
// a section (or for a nil *Policy) it refuses every connection and says
// why.
func (p *Policy) Network() *Network {
	switch {
	case p == nil:
		return refusingNetwork("there is no network section in the policy (there is no policy)")
	case p.network != nil:
		return p.network
	case p.NetworkSection != nil:
		return refusingNetwork("the network section of the policy was not parsed" + p.SourceNote())
	default:
		return refusingNetwork("there is no network section in the policy" + p.SourceNote())
	}
}
