package shapes

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// Bounds of an observation.
const (
	// MaxTextBytes bounds the text result parsed as JSON to observe it.
	MaxTextBytes = 64 << 10
	// maxNodesSeen bounds the values one observation walks.
	maxNodesSeen = 4096
	// maxListItems bounds the elements of one list looked at.
	maxListItems = 64
	// maxKeys is how many keys an object may have, in one result or over
	// the calls, before it is recorded as dict[str, T]: keys past it are
	// taken for data.
	maxKeys = 48
)

// A kind is a set of the scalar types seen at a place, and "cut" for a
// place deeper than an observation looks.
type kind uint8

const (
	kindNull kind = 1 << iota
	kindBool
	kindInt
	kindFloat
	kindStr
	kindCut
)

// A Node is the shape of the values seen at one place of a tool's
// results, merged over the calls: the scalar types, the shape of lists'
// elements, and of objects, their keys (with the calls each was seen in)
// or, for an object keyed by data, the shape of its values. It holds no
// value.
type Node struct {
	Kinds kind `json:"k,omitempty"`
	// Items is the shape of the elements of the lists seen here.
	Items *Node `json:"items,omitempty"`
	// Objects counts the calls in which an object was seen here.
	Objects int `json:"objects,omitempty"`
	// Keys are the keys of the objects seen here, with the calls each
	// was seen in; nil once they are taken for data (Dict).
	Keys map[string]*Field `json:"keys,omitempty"`
	// Dict is the shape of the values of an object keyed by data: one
	// with a key that does not look like an identifier, more than
	// maxKeys keys, or, over two calls or more, no key seen twice.
	Dict *Node `json:"dict,omitempty"`
}

// A Field is one key of an object: the calls it was seen in, and the
// shape of its values.
type Field struct {
	Seen int   `json:"seen"`
	Node *Node `json:"node"`
}

// identifier is what a key recorded by name looks like.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)

// Observe returns the shape of one result's value v (decoded JSON),
// walking at most maxNodesSeen values, MaxDepth deep, maxListItems
// elements of each list.
func Observe(v any) *Node {
	budget := maxNodesSeen
	return observe(v, 0, &budget)
}

func observe(v any, depth int, budget *int) *Node {
	n := &Node{}
	*budget--
	if depth >= MaxDepth || *budget < 0 {
		n.Kinds = kindCut
		return n
	}
	switch x := v.(type) {
	case nil:
		n.Kinds = kindNull
	case bool:
		n.Kinds = kindBool
	case float64:
		if x == float64(int64(x)) {
			n.Kinds = kindInt
		} else {
			n.Kinds = kindFloat
		}
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			n.Kinds = kindFloat
		} else {
			n.Kinds = kindInt
		}
	case string:
		n.Kinds = kindStr
	case []any:
		n.Items = &Node{}
		for i, e := range x {
			if i == maxListItems || *budget < 0 {
				break
			}
			n.Items.merge(observe(e, depth+1, budget))
		}
		if n.Items.empty() {
			n.Items = nil
		}
		if n.Items == nil {
			n.Items = &Node{} // an empty list: list[Any]
		}
	case map[string]any:
		n.Objects = 1
		data := len(x) > maxKeys
		for k := range x {
			if !identifier.MatchString(k) {
				data = true
				break
			}
		}
		if data {
			n.Dict = &Node{}
			for _, e := range x {
				if *budget < 0 {
					break
				}
				n.Dict.merge(observe(e, depth+1, budget))
			}
			return n
		}
		n.Keys = map[string]*Field{}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // a budget cut leaves the same keys out every time
		for _, k := range keys {
			n.Keys[k] = &Field{Seen: 1, Node: observe(x[k], depth+1, budget)}
		}
	default:
		n.Kinds = kindCut
	}
	return n
}

// empty reports whether nothing was seen at n.
func (n *Node) empty() bool {
	return n.Kinds == 0 && n.Items == nil && n.Objects == 0
}

// merge adds what o saw to n.
func (n *Node) merge(o *Node) {
	if o == nil {
		return
	}
	n.Kinds |= o.Kinds
	if o.Items != nil {
		if n.Items == nil {
			n.Items = &Node{}
		}
		n.Items.merge(o.Items)
	}
	if o.Objects == 0 {
		return
	}
	first := n.Objects == 0
	n.Objects += o.Objects
	switch {
	case n.Dict != nil || o.Dict != nil:
		n.toDict()
		if o.Dict != nil {
			n.Dict.merge(o.Dict)
		}
		for _, f := range o.Keys {
			n.Dict.merge(f.Node)
		}
		return
	case first:
		n.Keys = map[string]*Field{}
	}
	for k, f := range o.Keys {
		if mine, ok := n.Keys[k]; ok {
			mine.Seen += f.Seen
			mine.Node.merge(f.Node)
		} else {
			n.Keys[k] = &Field{Seen: f.Seen, Node: f.Node}
		}
	}
	if len(n.Keys) > maxKeys || (n.Objects >= 2 && !n.anyKeySeenTwice()) {
		n.toDict()
	}
}

// anyKeySeenTwice reports whether a key of n's objects was seen in two
// calls or more.
func (n *Node) anyKeySeenTwice() bool {
	for _, f := range n.Keys {
		if f.Seen >= 2 {
			return true
		}
	}
	return len(n.Keys) == 0
}

// toDict takes n's keys for data: their values' shapes merge into Dict.
func (n *Node) toDict() {
	if n.Dict == nil {
		n.Dict = &Node{}
	}
	for _, f := range n.Keys {
		n.Dict.merge(f.Node)
	}
	n.Keys = nil
}

// Text returns the display text of n, as Render's: keys seen in two
// calls or more, the others left out; those not seen in every call
// marked "?".
func (n *Node) Text() string { return Cut(n.text(0)) }

func (n *Node) text(depth int) string {
	if n == nil || n.empty() {
		return "Any"
	}
	var parts []string
	if n.Kinds&kindCut != 0 {
		parts = append(parts, "…")
	}
	if n.Kinds&kindBool != 0 {
		parts = append(parts, "bool")
	}
	switch {
	case n.Kinds&kindFloat != 0:
		parts = append(parts, "float")
	case n.Kinds&kindInt != 0:
		parts = append(parts, "int")
	}
	if n.Kinds&kindStr != 0 {
		parts = append(parts, "str")
	}
	if n.Items != nil {
		parts = append(parts, "list["+n.Items.text(depth+1)+"]")
	}
	if n.Objects > 0 {
		parts = append(parts, n.objectText(depth))
	}
	if n.Kinds&kindNull != 0 {
		parts = append(parts, "None")
	}
	return union(parts)
}

// objectText renders the objects seen at n.
func (n *Node) objectText(depth int) string {
	if n.Dict != nil || len(n.Keys) == 0 {
		return "dict[str, " + n.Dict.text(depth+1) + "]"
	}
	var shown []string
	for k, f := range n.Keys {
		if f.Seen >= 2 {
			shown = append(shown, k)
		}
	}
	if len(shown) == 0 {
		// One call: its keys are not yet told from data.
		values := &Node{}
		for _, f := range n.Keys {
			values.merge(f.Node)
		}
		return "dict[str, " + values.text(depth+1) + "]"
	}
	return object(shown, func(k string) bool { return n.Keys[k].Seen >= n.Objects },
		func(k string) string { return n.Keys[k].Node.text(depth + 1) })
}

// ValueOf returns the value of a tool's result to observe: its
// structured content, else its text when that is a JSON object or array
// of at most MaxTextBytes; ok is false when there is none.
func ValueOf(structured any, text string) (any, bool) {
	if structured != nil {
		return structured, true
	}
	t := strings.TrimSpace(text)
	if t == "" || len(t) > MaxTextBytes || (t[0] != '{' && t[0] != '[') {
		return nil, false
	}
	var v any
	if err := json.Unmarshal([]byte(t), &v); err != nil {
		return nil, false
	}
	return v, true
}
