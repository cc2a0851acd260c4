package mcpbridge

import (
	"slices"
	"sync"
)

// A clientState is the servers one client connection has loaded.
type clientState struct {
	mu     sync.Mutex
	loaded []string // in load order
}

// add loads names and reports whether any was new.
func (c *clientState) add(names []string) (added bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		if !slices.Contains(c.loaded, n) {
			c.loaded = append(c.loaded, n)
			added = true
		}
	}
	return added
}

// servers returns the loaded servers, in load order.
func (c *clientState) servers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.loaded)
}

// has reports whether server name is loaded.
func (c *clientState) has(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.loaded, name)
}
