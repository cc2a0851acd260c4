// Package mcpbridge will hold the MCP server layer: the run_python tool
// over stdio and the clients of proxied MCP servers. It is built in the
// bridge issue; the engine layer it stands on is package engine.
package mcpbridge
