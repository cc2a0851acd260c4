package entrypoint

import (
	"context"
	"fmt"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// Fork copies the session's sandbox, between calls, into n new sandbox
// containers restored from one checkpoint of it (engine.Snapshotter),
// labelled with labels over its own; the sandbox goes on as it was. It
// returns the forks' container IDs and the engine they run on ("" when
// the engine names none). Each is reached as a persistent sandbox
// (Resume, Adopt): the session's sandbox is made persistent first, if it
// was not, so that its copies outlive their first streams.
func (s *Session) Fork(ctx context.Context, n int, labels map[string]string) (ids []string, engineName string, err error) {
	if s.opts.Sleep == nil {
		return nil, "", fmt.Errorf("forking a sandbox: %w: snapshots are off (MCP_BRIDGE_SNAPSHOTS)", engine.ErrNoSnapshots)
	}
	ctr, release, err := s.live(ctx)
	if err != nil {
		return nil, "", err
	}
	defer release()
	id, engineName := ctr.sb.ID(), placedOn(ctr.sb)
	s.mu.Lock()
	resume := s.resume
	s.mu.Unlock()
	if resume == nil {
		if err := ctr.send(persistFrame{T: framePersist, IdleMS: 0}); err != nil {
			return nil, "", fmt.Errorf("making the sandbox persistent, to fork it: %w", err)
		}
		// A round trip: the runtime has taken the persist frame (it
		// serves the hosts' socket) before the checkpoint copies it.
		if _, err := s.run(ctx, ctr, &Call{Code: "pass", Timeout: s.opts.readyTimeout()}); err != nil {
			return nil, "", fmt.Errorf("making the sandbox persistent, to fork it: %w", err)
		}
		s.mu.Lock()
		s.resume, s.ownsSleeper = &resumeRef{engine: engineName, ref: id}, true
		s.mu.Unlock()
	}
	ids, err = engine.ForkSandbox(ctx, s.eng, engineName, id, n, labels)
	if err != nil {
		return nil, "", err
	}
	return ids, engineName, nil
}
