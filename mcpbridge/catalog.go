package mcpbridge

import (
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A toolCatalog remembers the tools each configured server listed last,
// whichever instance of it listed them, so that searching and documenting
// the tools of many servers does not start an instance of each in every
// client session.
type toolCatalog struct {
	mu      sync.Mutex
	entries map[string]catalogEntry
}

type catalogEntry struct {
	cfg   serverConfig
	tools []*mcp.Tool
}

func newToolCatalog() *toolCatalog { return &toolCatalog{entries: map[string]catalogEntry{}} }

// put records the tools an instance of the server cfg listed.
func (c *toolCatalog) put(cfg serverConfig, tools []*mcp.Tool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[cfg.Name] = catalogEntry{cfg: cfg, tools: tools}
}

// get returns the tools last listed by the server cfg, if it is still
// defined so.
func (c *toolCatalog) get(cfg serverConfig) ([]*mcp.Tool, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[cfg.Name]
	if !ok || !sameConfig(e.cfg, cfg) {
		return nil, false
	}
	return e.tools, true
}
