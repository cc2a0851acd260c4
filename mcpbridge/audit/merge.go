package audit

import (
	"time"
)

// refused writes rec, the record of a refusal of key, merged as the
// package's comment says.
func (a *Log) refused(key mergeKey, rec map[string]any) {
	a.mergeMu.Lock()
	if a.windows == nil {
		a.windows, a.sessionTargets = map[mergeKey]*mergeWindow{}, map[string]int{}
	}
	w := a.windows[key]
	if w == nil && a.sessionTargets[key.session] >= maxTargetsPerSession {
		key = mergeKey{event: key.event, session: key.session, target: mergedTarget}
		rec = mergedRecord(rec)
		w = a.windows[key]
	}
	if w == nil {
		if len(a.windows) >= maxMergeWindows || a.mergeClosed {
			a.mergeMu.Unlock()
			rec["count"] = 1
			a.write(rec)
			return
		}
		a.windows[key] = &mergeWindow{since: time.Now()}
		if key.target != mergedTarget {
			a.sessionTargets[key.session]++
		}
		time.AfterFunc(MergeWindow, func() { a.endWindow(key) })
		a.mergeMu.Unlock()
		rec["count"] = 1
		a.write(rec)
		return
	}
	w.count++
	if w.first == nil {
		w.first = rec
	}
	a.mergeMu.Unlock()
}

// endWindow writes the record of key's window, when refusals came in it,
// and opens the next one; a window that had none is closed.
func (a *Log) endWindow(key mergeKey) {
	a.mergeMu.Lock()
	w := a.windows[key]
	if w == nil {
		a.mergeMu.Unlock()
		return
	}
	if w.count == 0 || a.mergeClosed {
		a.closeWindow(key)
		a.mergeMu.Unlock()
		return
	}
	rec, n, since := w.first, w.count, w.since
	w.first, w.count, w.since = nil, 0, time.Now()
	time.AfterFunc(MergeWindow, func() { a.endWindow(key) })
	a.mergeMu.Unlock()
	a.write(windowRecord(rec, n, since))
}

// closeWindow forgets key's window; a.mergeMu is held.
func (a *Log) closeWindow(key mergeKey) {
	delete(a.windows, key)
	if key.target != mergedTarget {
		if a.sessionTargets[key.session]--; a.sessionTargets[key.session] <= 0 {
			delete(a.sessionTargets, key.session)
		}
	}
}

// flushRefusals writes the record of every window that had refusals and
// merges no more (Close): refusals that come later are written as they
// come, until the file is closed.
func (a *Log) flushRefusals() {
	a.mergeMu.Lock()
	a.mergeClosed = true
	var recs []map[string]any
	for key, w := range a.windows {
		if w.count > 0 {
			recs = append(recs, windowRecord(w.first, w.count, w.since))
		}
		a.closeWindow(key)
	}
	a.mergeMu.Unlock()
	for _, rec := range recs {
		a.write(rec)
	}
}

// Flush writes the records of the refusals merged so far (see
// MergeWindow) at once, without waiting for their windows to end; the
// windows stay open. For tests and for an orderly stop.
func (a *Log) Flush() {
	if a == nil {
		return
	}
	a.mergeMu.Lock()
	var recs []map[string]any
	for _, w := range a.windows {
		if w.count > 0 {
			recs = append(recs, windowRecord(w.first, w.count, w.since))
			w.first, w.count, w.since = nil, 0, time.Now()
		}
	}
	a.mergeMu.Unlock()
	for _, rec := range recs {
		a.write(rec)
	}
}

// Close writes the refusals merged so far and closes the file. Records
// written later are lost (and counted).
func (a *Log) Close() error {
	if a == nil {
		return nil
	}
	a.flushRefusals()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}
