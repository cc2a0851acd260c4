// Package packages is what the bridge knows of Python packages: the
// requirements a configuration or sandbox code names, checked before any
// of them reaches pip.
package packages

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Bounds of what is accepted.
const (
	// MaxRequirements bounds the requirements of one set or install.
	MaxRequirements = 500
	// maxRequirementBytes bounds one requirement as written.
	maxRequirementBytes = 1000
)

// ErrRequirement reports a requirement that is not a plain PEP 508
// requirement (a name, extras, version specifiers, a marker): a URL, a
// path, a pip option, or text that does not parse.
var ErrRequirement = errors.New("not a PEP 508 requirement")

// A Requirement is one checked PEP 508 requirement, without a URL.
type Requirement struct {
	// Name is the project name, normalized (PEP 503: lower case, runs of
	// "-", "_" and "." as one "-").
	Name string
	// Extras are the extras asked for, normalized and sorted.
	Extras []string
	// Specifier is the version specifiers, comma-separated, without
	// spaces (such as ">=1.20,<2"); "" for any version.
	Specifier string
	// Marker is the environment marker, its spacing normalized; "" when
	// none.
	Marker string
	// Hashes are the hashes a requirements file gave it ("sha256:…"),
	// sorted; pip then installs only files with one of them.
	Hashes []string
}

// String returns r as a line of a requirements file, in a canonical form:
// two requirements that mean the same are the same string.
func (r Requirement) String() string {
	var b strings.Builder
	b.WriteString(r.Name)
	if len(r.Extras) > 0 {
		b.WriteString("[" + strings.Join(r.Extras, ",") + "]")
	}
	b.WriteString(r.Specifier)
	if r.Marker != "" {
		b.WriteString("; " + r.Marker)
	}
	for _, h := range r.Hashes {
		b.WriteString(" --hash=" + h)
	}
	return b.String()
}

var (
	nameRE      = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?`)
	separatorRE = regexp.MustCompile(`[-_.]+`)
	clauseRE    = regexp.MustCompile(`^(~=|===|==|!=|<=|>=|<|>)\s*([A-Za-z0-9][A-Za-z0-9._*+!-]*)$`)
	hashRE      = regexp.MustCompile(`^(sha256|sha384|sha512):[0-9a-f]{64,128}$`)
)

// normalizeName returns a project or extra name as PEP 503 compares it.
func normalizeName(s string) string {
	return separatorRE.ReplaceAllString(strings.ToLower(s), "-")
}

// Parse checks one requirement as sandbox code or MCP_BRIDGE_PACKAGES
// writes it: "numpy", "pandas>=2,<3", "requests[socks]==2.32.3",
// `tomli; python_version < "3.11"`. A URL ("name @ https://…"), a path,
// a pip option ("-e", "--index-url=…") or anything else pip would read
// as more than a requirement is refused with an error wrapping
// ErrRequirement that quotes it and says why.
func Parse(s string) (Requirement, error) {
	bad := func(why string) (Requirement, error) {
		return Requirement{}, fmt.Errorf("requirement %q: %w: %s", cut(s, 80), ErrRequirement, why)
	}
	text := strings.TrimSpace(s)
	switch {
	case text == "":
		return bad("it is empty")
	case len(text) > maxRequirementBytes:
		return bad(fmt.Sprintf("it is over %d bytes", maxRequirementBytes))
	case strings.HasPrefix(text, "-"):
		return bad("pip options are not allowed (only a name, extras, version specifiers and a marker)")
	case strings.ContainsAny(text, "\x00\r\n\t\\`$|&{}"):
		return bad("it holds characters no requirement has")
	}
	body, marker, hasMarker := strings.Cut(text, ";")
	if strings.Contains(body, "@") || strings.Contains(body, "://") {
		return bad("URLs are not allowed: name a package of the index")
	}
	if strings.ContainsAny(body, `/\`) || strings.HasPrefix(body, ".") || strings.HasPrefix(body, "~") {
		return bad("paths are not allowed: name a package of the index")
	}
	name := nameRE.FindString(body)
	if name == "" {
		return bad("it does not begin with a project name")
	}
	r := Requirement{Name: normalizeName(name)}
	rest := strings.TrimSpace(body[len(name):])
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return bad("its extras are not closed with ]")
		}
		for e := range strings.SplitSeq(rest[1:end], ",") {
			e = strings.TrimSpace(e)
			if nameRE.FindString(e) != e || e == "" {
				return bad(fmt.Sprintf("%q is not an extra's name", e))
			}
			r.Extras = append(r.Extras, normalizeName(e))
		}
		slices.Sort(r.Extras)
		r.Extras = slices.Compact(r.Extras)
		rest = strings.TrimSpace(rest[end+1:])
	}
	if strings.HasPrefix(rest, "(") && strings.HasSuffix(rest, ")") {
		rest = strings.TrimSpace(rest[1 : len(rest)-1])
	}
	if rest != "" {
		var clauses []string
		for c := range strings.SplitSeq(rest, ",") {
			m := clauseRE.FindStringSubmatch(strings.TrimSpace(c))
			if m == nil {
				return bad(fmt.Sprintf("%q is not a version specifier (such as >=1.2 or ==2.0.*)", strings.TrimSpace(c)))
			}
			clauses = append(clauses, m[1]+m[2])
		}
		r.Specifier = strings.Join(clauses, ",")
	}
	if hasMarker {
		m, err := normalizeMarker(marker)
		if err != nil {
			return bad(err.Error())
		}
		r.Marker = m
	}
	return r, nil
}

// cut returns s cut to at most n bytes, marked when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
