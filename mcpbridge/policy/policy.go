// Package policy is the tool policy: what code in the sandbox may do with
// the proxied MCP servers, as the operator's policy file says (servers it
// may load, tools that exist, tools a person must confirm, the bound of
// proxied calls, the argument keys audit records hide), and the file,
// read again whenever it changes.
package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
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

// parse parses a policy file's content, JSON or (when name ends in
// .toml) TOML. Unknown keys, invalid globs, invalid UTF-8, an empty or
// huge file are errors: a policy is taken whole or not at all. ${NAME}
// in the network section's inject values come from the environment.
func parse(data []byte, name string) (*Policy, error) {
	return parseWith(data, name, os.LookupEnv)
}

// parseWith is parse with the environment given by lookup.
func parseWith(data []byte, name string, lookup func(string) (string, bool)) (*Policy, error) {
	if len(data) > maxPolicyBytes {
		return nil, fmt.Errorf("it is %d bytes; at most %d are read", len(data), maxPolicyBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("it is empty (write {} for a policy that allows everything)")
	}
	if !utf8.Valid(data) {
		return nil, errors.New("it is not valid UTF-8")
	}
	src, isTOML := data, strings.HasSuffix(name, ".toml")
	if isTOML {
		var doc map[string]any
		if err := toml.Unmarshal(data, &doc); err != nil {
			return nil, err
		}
		var err error
		if data, err = json.Marshal(doc); err != nil {
			return nil, err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	p := &Policy{}
	if err := dec.Decode(p); err != nil {
		if isTOML {
			return nil, sourcePosition(src, true, err)
		}
		return nil, jsonPosition(data, err)
	}
	if dec.More() {
		return nil, errors.New("it holds more than one JSON value")
	}
	p.source = name
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.NetworkSection != nil {
		n, err := parseNetwork(p.NetworkSection, lookup)
		if err != nil {
			return nil, sourcePosition(src, isTOML, err)
		}
		p.network = n
	}
	return p, nil
}

// jsonPosition adds the line and column to a JSON syntax or type
// error, and to the other errors sourcePosition can place.
func jsonPosition(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return atOffset(data, int(se.Offset), err)
	case errors.As(err, &te) && te.Offset > 0:
		return atOffset(data, int(te.Offset), err)
	}
	return sourcePosition(data, false, err)
}

// atOffset adds to err the line and column of the byte at off of data.
func atOffset(data []byte, off int, err error) error {
	line, col := 1, 1
	for _, c := range data[:max(0, min(off, len(data)))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// sourcePosition adds the line and column of what err is about, when it
// can tell, to an unknown key or an error in the network section; src is
// the file as written (TOML when toml). It finds the place by its text:
// the value as written, else the key, after the first "network".
func sourcePosition(src []byte, toml bool, err error) error {
	var ne *networkError
	if errors.As(err, &ne) {
		base := bytes.Index(src, []byte("network"))
		if base < 0 {
			return err
		}
		if ne.needle != "" {
			for _, q := range []string{strconv.Quote(ne.needle), "'" + ne.needle + "'"} {
				if i := bytes.Index(src[base:], []byte(q)); i >= 0 {
					return atOffset(src, base+i, err)
				}
			}
		}
		if i := keyIndex(src[base:], ne.key, toml); i >= 0 {
			return atOffset(src, base+i, err)
		}
		return err
	}
	msg := err.Error()
	if _, key, ok := strings.Cut(msg, "unknown field "); ok {
		if k, uerr := strconv.Unquote(key); uerr == nil {
			if i := keyIndex(src, k, toml); i >= 0 {
				return atOffset(src, i, err)
			}
		}
	}
	return err
}

// keyIndex finds where key is written as a key in src: "key" in JSON,
// key or "key" followed by =, ] or . in TOML; -1 when it is not.
func keyIndex(src []byte, key string, toml bool) int {
	if !toml {
		return bytes.Index(src, []byte(strconv.Quote(key)))
	}
	for _, k := range []string{strconv.Quote(key), key} {
		for off := 0; ; {
			i := bytes.Index(src[off:], []byte(k))
			if i < 0 {
				break
			}
			at := off + i
			rest := bytes.TrimLeft(src[at+len(k):], " \t")
			before := byte('\n')
			if at > 0 {
				before = src[at-1]
			}
			if len(rest) > 0 && bytes.IndexByte([]byte("=]."), rest[0]) >= 0 && bytes.IndexByte([]byte("\n \t[.{,"), before) >= 0 {
				return at
			}
			off = at + len(k)
		}
	}
	return -1
}

// validate checks the limits and every glob of p.
func (p *Policy) validate() error {
	if len(p.Servers) > maxPolicyServers {
		return fmt.Errorf("servers has %d entries; at most %d are allowed", len(p.Servers), maxPolicyServers)
	}
	if p.MaxToolCalls < 0 {
		return fmt.Errorf("max_tool_calls is %d; want a positive number (0 or absent: %d)", p.MaxToolCalls, defaultMaxToolCalls)
	}
	switch p.ConfirmWithoutElicitation {
	case "", confirmRefuse, confirmAllow:
	default:
		return fmt.Errorf("confirm_without_elicitation is %q; want %q or %q", p.ConfirmWithoutElicitation, confirmRefuse, confirmAllow)
	}
	if err := checkGlobs("redact_keys", p.RedactKeys); err != nil {
		return err
	}
	if err := checkConfirmVia("confirm_via", p.ConfirmVia); err != nil {
		return err
	}
	for key, r := range p.Servers {
		if err := checkGlobs("servers key", []string{key}); err != nil {
			return err
		}
		if r == nil {
			return fmt.Errorf("servers[%q] is null; want an object", key)
		}
		r.key = key
		if err := checkConfirmVia(fmt.Sprintf("servers[%q].confirm_via", key), r.ConfirmVia); err != nil {
			return err
		}
		for list, globs := range map[string][]string{"allow": r.Allow, "deny": r.Deny, "confirm": r.Confirm} {
			if err := checkGlobs(fmt.Sprintf("servers[%q].%s", key, list), globs); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkGlobs checks a list of globs: its length, each one's length and
// syntax (path.Match's: *, ?, [classes], \ escapes).
func checkGlobs(where string, globs []string) error {
	if len(globs) > maxPolicyPatterns {
		return fmt.Errorf("%s has %d globs; at most %d are allowed", where, len(globs), maxPolicyPatterns)
	}
	for _, g := range globs {
		if g == "" || len(g) > maxPatternLen {
			return fmt.Errorf("%s: glob %q: want 1 to %d bytes", where, g, maxPatternLen)
		}
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("%s: glob %q: %w", where, g, err)
		}
	}
	return nil
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
