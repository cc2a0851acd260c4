package toolsearch

import (
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// splitWords splits text into lowercase words, breaking on anything but
// a letter or digit, on "_" and "-", and on camelCase.
func splitWords(text string, fn func(w string)) {
	var buf [64]byte
	cur := buf[:0]
	flush := func() {
		if len(cur) > 0 {
			fn(string(cur))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range text {
		switch {
		case r < utf8.RuneSelf:
			switch {
			case 'A' <= r && r <= 'Z':
				if prevLower {
					flush()
				}
				cur = append(cur, byte(r)+'a'-'A')
				prevLower = false
			case 'a' <= r && r <= 'z':
				cur = append(cur, byte(r))
				prevLower = true
			case '0' <= r && r <= '9':
				cur = append(cur, byte(r))
			default:
				flush()
				prevLower = false
			}
		case unicode.IsUpper(r):
			if prevLower {
				flush()
			}
			cur = utf8.AppendRune(cur, unicode.ToLower(r))
			prevLower = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = utf8.AppendRune(cur, r)
			prevLower = unicode.IsLower(r)
		default:
			flush()
			prevLower = false
		}
		if len(cur) > 64 { // no word is that long: cut it
			flush()
		}
	}
	flush()
}

// stemCache memoizes stemWord; bounded, as queries bring any word.
var stemCache = struct {
	sync.RWMutex
	m map[string]string
}{m: map[string]string{}}

const stemCacheMax = 200_000

// stemWord is the Snowball (Porter2) stem of a lowercase word; a word
// with other than ASCII letters is its own stem.
func stemWord(w string) string {
	stemCache.RLock()
	s, ok := stemCache.m[w]
	stemCache.RUnlock()
	if ok {
		return s
	}
	s = stemOf(w)
	stemCache.Lock()
	if len(stemCache.m) < stemCacheMax {
		stemCache.m[w] = s
	}
	stemCache.Unlock()
	return s
}

// stemOf is stemWord, uncached.
func stemOf(w string) string {
	if len(w) <= 2 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || 'z' < w[i] {
			return w
		}
	}
	return english.Stem(w, true)
}

// extraStopwords carry no meaning in a search for a tool, beyond
// Snowball's English stopwords.
var extraStopwords = map[string]bool{
	"want": true, "need": true, "please": true, "let": true, "would": true, "could": true,
	"like": true, "via": true, "also": true, "new": true, "whats": true, "im": true,
	"ve": true, "ll": true, "re": true, "d": true, "m": true, "something": true, "thing": true,
	"things": true, "may": true, "might": true, "must": true, "shall": true, "one": true,
	"using": true, "use": true, "tool": true, "tools": true, "able": true, "someone": true,
}

func isStopword(w string) bool { return english.IsStopWord(w) || extraStopwords[w] }

// normalizer maps a word to the form the index holds.
func normalizer(stem bool) func(string) string {
	if stem {
		return stemWord
	}
	return func(w string) string { return w }
}
