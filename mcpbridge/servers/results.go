package servers

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/shapes"
)

// A results is what the set knows of its tools' results: the compiled
// output schemas the structured content of their results is checked
// against, and the shapes observed of the results of tools that declare
// none.
type results struct {
	observed *shapes.Store // nil: results are not observed
	schemas  toolCache[*compiled]
	rendered toolCache[string] // its output schema's shape
}

// maxCached bounds a toolCache: a tool list listed again gives new
// *mcp.Tool values, and the old ones' entries go when it is full.
const maxCached = 4096

// A toolCache keeps what was worked out of a listed tool.
type toolCache[V any] struct {
	mu sync.Mutex
	m  map[*mcp.Tool]V
}

// get returns t's entry, working it out with make the first time.
func (c *toolCache[V]) get(t *mcp.Tool, make func() V) V {
	c.mu.Lock()
	v, ok := c.m[t]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = make()
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = map[*mcp.Tool]V{}
	}
	c.m[t] = v
	c.mu.Unlock()
	return v
}

// A compiled is a tool's output schema, resolved for validation, or why
// it cannot be.
type compiled struct {
	resolved *jsonschema.Resolved
	err      error
}

// maxWarning bounds the text of one validation warning.
const maxWarning = 300

// after handles a result of tool t (nil: not listed) of server at
// version: with an output schema, its structured content is checked
// against it, and the mismatch returned as one warning line (never a
// changed value); without one, the value of the result is observed.
func (rs *results) after(server, version, tool string, t *mcp.Tool, res *mcp.CallToolResult) []string {
	if res == nil || res.IsError {
		return nil
	}
	if t != nil && t.OutputSchema != nil {
		if w := rs.check(server, tool, t, res); w != "" {
			return []string{w}
		}
		return nil
	}
	if rs.observed == nil {
		return nil
	}
	var text string
	if res.StructuredContent == nil && len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	rs.observed.Record(server, version, tool, res.StructuredContent, text)
	return nil
}

// check validates the structured content of res against t's output
// schema, and says where it does not match ("" when it does, or when the
// schema cannot be used: the call is never failed for it).
func (rs *results) check(server, tool string, t *mcp.Tool, res *mcp.CallToolResult) string {
	c := rs.schemas.get(t, func() *compiled { return compile(t.OutputSchema) })
	if c.err != nil {
		return ""
	}
	instance := res.StructuredContent
	if instance == nil {
		return fmt.Sprintf("%s.%s declares an output schema but returned no structured content", server, tool)
	}
	// The instance as JSON decodes it (numbers as float64, objects as
	// maps), which the validator expects.
	data, err := json.Marshal(instance)
	if err != nil {
		return ""
	}
	var decoded any
	if json.Unmarshal(data, &decoded) != nil {
		return ""
	}
	if err := c.resolved.Validate(decoded); err != nil {
		msg := strings.Join(strings.Fields(err.Error()), " ")
		if len(msg) > maxWarning {
			msg = msg[:maxWarning] + "…"
		}
		return fmt.Sprintf("%s.%s returned a result that does not match its output schema: %s", server, tool, msg)
	}
	return ""
}

// compile resolves an output schema for validation.
func compile(schema any) *compiled {
	data, err := json.Marshal(schema)
	if err != nil {
		return &compiled{err: err}
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return &compiled{err: err}
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return &compiled{err: err}
	}
	return &compiled{resolved: r}
}

// returns says what a tool returns, for its docs: the shape its output
// schema declares, else the shape observed of its results with the calls
// it rests on (0 for a declared one); "" when neither is known.
func (rs *results) returns(server string, t *mcp.Tool) (text string, observed int) {
	if t.OutputSchema != nil {
		return rs.rendered.get(t, func() string {
			text, err := shapes.Render(t.OutputSchema)
			if err != nil {
				return "(not shown: " + strings.TrimPrefix(err.Error(), shapes.ErrUnrenderable.Error()+": ") + ")"
			}
			return text
		}), 0
	}
	if text, calls, ok := rs.observed.Get(server, t.Name); ok {
		return text, calls
	}
	return "", 0
}
