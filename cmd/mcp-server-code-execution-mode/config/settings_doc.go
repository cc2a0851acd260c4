package config

import (
	"fmt"
	"strings"
)

// SettingsDocPath is where SettingsMarkdown is kept, from the module's
// root.
const SettingsDocPath = "docs/SETTINGS.md"

// SettingsDocCommand regenerates SettingsDocPath.
const SettingsDocCommand = "go test ./cmd/mcp-server-code-execution-mode/config -run TestSettingsDoc -update"

// SettingsMarkdown returns docs/SETTINGS.md: an introduction, then one
// table per group of the settings (setting, default, what it does).
func SettingsMarkdown() string {
	var b strings.Builder
	b.WriteString("# Settings\n\n")
	fmt.Fprintf(&b, "<!-- Generated from cmd/mcp-server-code-execution-mode/config/settings.go; do not edit.\n"+
		"     Regenerate: %s -->\n\n", SettingsDocCommand)
	b.WriteString("Every setting is an environment variable, read once at start; an invalid value stops the program " +
		"naming it (`MCP_BRIDGE_MEMORY=\"lots\": want a size of at least 6m, such as 512m or 1g`). " +
		"Sizes take `k`, `m`, `g` (`512m`); times are whole seconds. " +
		"`mcp-server-code-execution-mode doctor` lists the settings that are set, and where each came from.\n\n")
	var toc []string
	for _, g := range Groups() {
		toc = append(toc, fmt.Sprintf("[%s](#%s)", g.Title(), anchor(g.Title())))
	}
	b.WriteString("Groups: " + strings.Join(toc, ", ") + ".\n")
	all := Settings()
	for _, g := range Groups() {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", g.Title(), g.Intro())
		b.WriteString("| Setting | Default | What it does |\n|---|---|---|\n")
		for _, s := range all {
			if s.Group != g {
				continue
			}
			name := "`" + s.Name + "`"
			if s.ReplacedBy != "" {
				name += " (deprecated)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", name, cell(s.Default), cell(s.Help))
		}
	}
	return b.String()
}

// cell escapes s for a cell of a Markdown table.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// anchor is the fragment GitHub gives a heading: lower case, spaces as
// hyphens, other punctuation dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(heading) {
		switch {
		case c == ' ':
			b.WriteRune('-')
		case c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			b.WriteRune(c)
		}
	}
	return b.String()
}
