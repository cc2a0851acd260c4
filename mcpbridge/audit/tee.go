package audit

// Tee makes f receive each record's JSON line (without its newline) as
// it is written, such as the console's ring of recent records; nil stops
// it. f is called with the log's lock held, in the order of the lines:
// it must be quick and must not write to a.
func (a *Log) Tee(f func(line []byte)) {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.tee = f
	a.mu.Unlock()
}
