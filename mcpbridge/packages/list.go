package packages

import (
	"fmt"
	"slices"
	"strings"
)

// ParseList checks requirements separated by whitespace, as
// MCP_BRIDGE_PACKAGES and runtime.install give them ("numpy>=1.20,<2
// pandas": commas belong to specifiers). A marker with spaces needs a
// requirements file (ParseFile). The result is sorted and without
// duplicates; an error names the first bad requirement.
func ParseList(s string) ([]Requirement, error) {
	return parseAll(strings.Fields(s), nil)
}

// ParseFile checks a requirements file: one requirement a line, blank
// lines and comments (# at the start or after a space) skipped, a line
// ending in \ continued on the next. The one option a line may carry is
// --hash (pip then checks every file it installs against the hashes);
// any other option, such as -r, -e or --index-url, is refused with the
// line's number. The result is sorted and without duplicates.
func ParseFile(text string) ([]Requirement, error) {
	var reqs []string
	var lineNos []int
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		no, line := i+1, lines[i]
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + " " + lines[i]
		}
		if j := strings.Index(line, " #"); j >= 0 {
			line = line[:j]
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		reqs, lineNos = append(reqs, line), append(lineNos, no)
	}
	return parseAll(reqs, lineNos)
}

// parseAll parses each requirement (a requirements file's lines when
// lineNos is set, with their --hash options), sorted and deduplicated.
func parseAll(items []string, lineNos []int) ([]Requirement, error) {
	if len(items) > MaxRequirements {
		return nil, fmt.Errorf("%d requirements: %w: at most %d at once", len(items), ErrRequirement, MaxRequirements)
	}
	var out []Requirement
	for i, item := range items {
		var hashes []string
		if lineNos != nil {
			var err error
			item, hashes, err = splitHashes(item)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", lineNos[i], err)
			}
		}
		r, err := Parse(item)
		if err != nil {
			if lineNos != nil {
				return nil, fmt.Errorf("line %d: %w", lineNos[i], err)
			}
			return nil, err
		}
		r.Hashes = hashes
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Requirement) int { return strings.Compare(a.String(), b.String()) })
	return slices.CompactFunc(out, func(a, b Requirement) bool { return a.String() == b.String() }), nil
}

// splitHashes takes the --hash options off a requirements file's line.
func splitHashes(line string) (string, []string, error) {
	fields := strings.Fields(line)
	var keep, hashes []string
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if !strings.HasPrefix(f, "--hash") {
			keep = append(keep, f)
			continue
		}
		h, ok := strings.CutPrefix(f, "--hash=")
		if !ok && f == "--hash" && i+1 < len(fields) {
			i++
			h, ok = fields[i], true
		}
		if !ok || !hashRE.MatchString(h) {
			return "", nil, fmt.Errorf("%w: %q is not a --hash=sha256:<hex> option", ErrRequirement, f)
		}
		hashes = append(hashes, h)
	}
	slices.Sort(hashes)
	return strings.Join(keep, " "), slices.Compact(hashes), nil
}
