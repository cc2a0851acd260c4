package console

import "sync"

// A changeSignal tells the console's streams that what they show changed
// (a call began or ended, output arrived, a question came or went), so
// that they push at once instead of at their next look. Notify costs a
// lock when nobody waits. A nil *changeSignal tells nobody.
type changeSignal struct {
	mu sync.Mutex
	ch chan struct{} // closed at the next notify; nil while nobody waits
}

// Changed returns a channel closed at the next change (Notifier).
func (s *changeSignal) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// notify wakes whoever waits on Changed.
func (s *changeSignal) notify() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	s.mu.Unlock()
}
