package packages

import (
	"errors"
	"fmt"
	"strings"
)

// markerVariables are the names a PEP 508 environment marker may compare.
var markerVariables = map[string]bool{
	"python_version": true, "python_full_version": true, "os_name": true, "sys_platform": true,
	"platform_release": true, "platform_system": true, "platform_version": true, "platform_machine": true,
	"platform_python_implementation": true, "implementation_name": true, "implementation_version": true,
	"extra": true,
}

// markerOperators are the comparison operators of a marker.
var markerOperators = map[string]bool{
	"==": true, "!=": true, "<=": true, ">=": true, "<": true, ">": true, "~=": true, "===": true,
	"in": true, "not in": true,
}

// normalizeMarker checks an environment marker (the text after ";") and
// returns it with its tokens one space apart; pip evaluates it, the bridge
// only makes sure it is a marker and nothing else.
func normalizeMarker(s string) (string, error) {
	toks, err := markerTokens(s)
	if err != nil {
		return "", err
	}
	if len(toks) == 0 {
		return "", errors.New("its marker after ; is empty")
	}
	p := &markerParser{toks: toks}
	if err := p.expr(); err != nil {
		return "", err
	}
	if p.i != len(toks) {
		return "", fmt.Errorf("its marker has %q where it should end", toks[p.i])
	}
	return strings.Join(toks, " "), nil
}

// markerTokens splits a marker into names, quoted strings, operators and
// parentheses ("not in" is one token).
func markerTokens(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ':
			i++
		case c == '(' || c == ')':
			toks = append(toks, string(c))
			i++
		case c == '"' || c == '\'':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return nil, errors.New("its marker has a string that is not closed")
			}
			toks = append(toks, s[i:i+end+2])
			i += end + 2
		case strings.ContainsRune("=!<>~", rune(c)):
			j := i
			for j < len(s) && strings.ContainsRune("=!<>~", rune(s[j])) {
				j++
			}
			if !markerOperators[s[i:j]] {
				return nil, fmt.Errorf("its marker has %q, which is not an operator", s[i:j])
			}
			toks = append(toks, s[i:j])
			i = j
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_':
			j := i
			for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9' || s[j] == '_' || s[j] == '.') {
				j++
			}
			w := s[i:j]
			if w == "in" && len(toks) > 0 && toks[len(toks)-1] == "not" {
				toks[len(toks)-1] = "not in"
			} else {
				toks = append(toks, w)
			}
			i = j
		default:
			return nil, fmt.Errorf("its marker has %q, which no marker has", string(c))
		}
	}
	return toks, nil
}

// A markerParser checks the tokens of a marker against PEP 508's grammar:
// expr = and ("or" and)*; and = atom ("and" atom)*; atom = "(" expr ")" |
// value op value; value = a marker variable or a quoted string.
type markerParser struct {
	toks []string
	i    int
}

func (p *markerParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *markerParser) expr() error {
	if err := p.and(); err != nil {
		return err
	}
	for p.peek() == "or" {
		p.i++
		if err := p.and(); err != nil {
			return err
		}
	}
	return nil
}

func (p *markerParser) and() error {
	if err := p.atom(); err != nil {
		return err
	}
	for p.peek() == "and" {
		p.i++
		if err := p.atom(); err != nil {
			return err
		}
	}
	return nil
}

func (p *markerParser) atom() error {
	if p.peek() == "(" {
		p.i++
		if err := p.expr(); err != nil {
			return err
		}
		if p.peek() != ")" {
			return errors.New("its marker has a ( that is not closed")
		}
		p.i++
		return nil
	}
	if err := p.value(); err != nil {
		return err
	}
	if !markerOperators[p.peek()] {
		return fmt.Errorf("its marker has %q where a comparison should be", p.peek())
	}
	p.i++
	return p.value()
}

func (p *markerParser) value() error {
	t := p.peek()
	switch {
	case t == "":
		return errors.New("its marker ends too early")
	case t[0] == '"' || t[0] == '\'', markerVariables[t]:
		p.i++
		return nil
	}
	return fmt.Errorf("its marker has %q, which is neither a marker variable nor a quoted string", t)
}
