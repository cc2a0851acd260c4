package mcpbridge

import "github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"

// ErrPolicy reports a proxied call, tool or server that the tool policy
// refuses, or a policy file that cannot be used (then everything is
// refused). It is policy.ErrRefused.
var ErrPolicy = policy.ErrRefused
