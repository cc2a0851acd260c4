package entrypoint

// Sandbox returns the container ID of the session's live sandbox and the
// engine it runs on ("" when the engine names none); both are "" while
// it has none. It never starts one, and never waits for a call.
func (s *Session) Sandbox() (id, engineName string) {
	s.mu.Lock()
	ctr := s.ctr
	s.mu.Unlock()
	if ctr == nil || ctr.Err() != nil {
		return "", ""
	}
	return ctr.sb.ID(), placedOn(ctr.sb)
}
