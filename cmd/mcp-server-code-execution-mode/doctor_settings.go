package main

import (
	"fmt"
	"io"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
)

// A settingJSON is a setting that is set, in the settings check's
// report: its value (config.Hidden for a secret) and where it came from.
type settingJSON struct {
	Name   string `json:"name"`
	Group  string `json:"group"`
	Value  string `json:"value"`
	Source string `json:"source"`
	Note   string `json:"note,omitempty"`
}

// withSettings returns r, the settings check's result, with the
// settings getenv sets and the number of the others, at their defaults.
func withSettings(r checkResult, getenv func(string) string) checkResult {
	defaults := 0
	r.Settings = nil
	for _, v := range config.Effective(getenv) {
		if v.Source == config.SourceDefault {
			defaults++
			continue
		}
		r.Settings = append(r.Settings, settingJSON{Name: v.Name, Group: v.Group.Title(), Value: v.Shown,
			Source: v.Source, Note: v.Note})
	}
	r.Defaults = &defaults
	return r
}

// printSettings writes the settings of r, the settings check's result,
// under its line: one line each for those set, aligned, then how many
// have their defaults.
func printSettings(w io.Writer, r checkResult) {
	if r.Defaults == nil {
		return
	}
	width := 0
	for _, s := range r.Settings {
		width = max(width, len(s.Name))
	}
	for _, s := range r.Settings {
		from := s.Source
		if s.Note != "" {
			from += "; " + s.Note
		}
		fmt.Fprintf(w, "%6s%-*s  %s  (%s)\n", "", width, s.Name, s.Value, from)
	}
	others := "others"
	if len(r.Settings) == 0 {
		others = "settings"
	}
	fmt.Fprintf(w, "%6s%s at their defaults (%s lists them)\n", "", plural(*r.Defaults, "other", others), config.SettingsDocPath)
}
