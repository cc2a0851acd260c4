package toolsearch

import (
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"reflect"
	"sync"
)

// indexCache keeps the indexes of the last sets of tools searched, found
// again by a fingerprint of the tools (their servers, names, titles,
// descriptions and operator's keywords, and the identity of their input
// schemas: a tools/list answer is not changed in place), so that
// searching the same tools again, as every search_tool_docs does, does
// not index them again.
var indexCache struct {
	sync.Mutex
	entries []indexCacheEntry
}

type indexCacheEntry struct {
	key uint64
	n   int
	ix  *index
}

// indexCacheSize is how many indexes indexCache keeps.
var indexCacheSize = 4

var indexSeed = maphash.MakeSeed()

// docsFingerprint hashes what buildIndex reads of docs.
func docsFingerprint(docs []Doc, stem bool) uint64 {
	var h maphash.Hash
	h.SetSeed(indexSeed)
	if stem {
		h.WriteByte(1)
	}
	var num [8]byte
	writeInt := func(v uint64) {
		binary.LittleEndian.PutUint64(num[:], v)
		h.Write(num[:])
	}
	writeStr := func(s string) {
		writeInt(uint64(len(s)))
		h.WriteString(s)
	}
	writeInt(uint64(len(docs)))
	for i := range docs {
		d := &docs[i]
		writeStr(d.Server)
		writeStr(d.ServerAlias)
		writeStr(d.Tool)
		writeStr(d.Title)
		writeStr(d.Description)
		writeStr(d.Keywords)
		p, n, ok := schemaIdentity(d.Schema)
		if !ok { // a schema passed by value: its text
			raw, _ := json.Marshal(d.Schema)
			writeStr(string(raw))
			continue
		}
		writeInt(uint64(p))
		writeInt(uint64(n))
	}
	return h.Sum64()
}

// schemaIdentity is where a schema held by reference lives (and its
// length, for a slice); ok is false for one held by value.
func schemaIdentity(s any) (p uintptr, n int, ok bool) {
	if s == nil {
		return 0, 0, true
	}
	v := reflect.ValueOf(s)
	switch v.Kind() {
	case reflect.Map, reflect.Pointer:
		return v.Pointer(), 0, true
	case reflect.Slice:
		return v.Pointer(), v.Len(), true
	}
	return 0, 0, false
}

// cachedIndex is the index of docs: indexCache's, else built and kept
// there.
func cachedIndex(docs []Doc, stem bool) *index {
	if len(docs) == 0 {
		return buildIndex(docs, stem)
	}
	key := docsFingerprint(docs, stem)
	indexCache.Lock()
	for _, e := range indexCache.entries {
		if e.key == key && e.n == len(docs) {
			indexCache.Unlock()
			return e.ix
		}
	}
	indexCache.Unlock()
	ix := buildIndex(docs, stem)
	indexCache.Lock()
	indexCache.entries = append([]indexCacheEntry{{key: key, n: len(docs), ix: ix}}, indexCache.entries...)
	if len(indexCache.entries) > indexCacheSize {
		indexCache.entries = indexCache.entries[:indexCacheSize]
	}
	indexCache.Unlock()
	return ix
}
