package config

import (
	"strconv"
	"strings"
	"unicode"
)

// Where a setting's value comes from. The environment is the only place
// Load reads; a setting it does not find there has its default.
const (
	SourceEnvironment = "environment"
	SourceDefault     = "default"
)

// Hidden is shown instead of the value of a secret setting.
const Hidden = "set (hidden)"

// maxShownValue bounds a value as Effective shows it.
const maxShownValue = 120

// A Value is a setting as a process sees it: the value it is given, fit
// to be shown, and where it comes from.
type Value struct {
	Setting
	// Shown is the value as set (trimmed, quoted when it holds
	// control characters, shortened past maxShownValue), Hidden for a
	// secret; "" when Source is SourceDefault.
	Shown string
	// Source is SourceEnvironment or SourceDefault.
	Source string
	// Note says why a value that is set is not used ("" when it is).
	Note string
}

// Effective returns every setting, in the order of Settings, with the
// value getenv (nil: none) gives it and where it comes from. A secret's
// value is never returned, only that it is set.
func Effective(getenv func(string) string) []Value {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var out []Value
	for _, s := range Settings() {
		v := Value{Setting: s, Source: SourceDefault}
		if raw := strings.TrimSpace(getenv(s.Name)); raw != "" {
			v.Source, v.Shown = SourceEnvironment, shown(raw)
			if s.Secret() {
				v.Shown = Hidden
			}
			if s.ReplacedBy != "" {
				v.Note = "deprecated: use " + s.ReplacedBy
				if strings.TrimSpace(getenv(s.ReplacedBy)) != "" {
					v.Note = "ignored: " + s.ReplacedBy + " is set"
				}
			}
		}
		out = append(out, v)
	}
	return out
}

// shown is v fit for one line: quoted when it holds a control character,
// shortened past maxShownValue characters.
func shown(v string) string {
	if r := []rune(v); len(r) > maxShownValue {
		v = string(r[:maxShownValue]) + "…"
	}
	if strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return strconv.Quote(v)
	}
	return v
}
