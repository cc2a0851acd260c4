package tasks

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// A taskTable holds the tasks this replica runs, or ran and keeps.
type taskTable struct {
	mu sync.Mutex
	m  map[string]*Task
}

// add records t, unless the bridge or t's sandbox holds its most.
func (tt *taskTable) add(t *Task, max, maxPerSandbox int) error {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.m == nil {
		tt.m = map[string]*Task{}
	}
	now := time.Now()
	for id, o := range tt.m {
		if o.expired(now) {
			delete(tt.m, id) // not yet swept
		}
	}
	if len(tt.m) >= max {
		return fmt.Errorf("this bridge keeps %d tasks, the most MCP_BRIDGE_MAX_TASKS allows (a task is kept until its time to live after it ended); call again later", len(tt.m))
	}
	n := 0
	for _, o := range tt.m {
		if o.owner == t.owner {
			n++
		}
	}
	if n >= maxPerSandbox {
		return fmt.Errorf("this sandbox has %d tasks, the most MCP_BRIDGE_MAX_TASKS_PER_SANDBOX allows (a task is kept until its time to live after it ended); call again later", n)
	}
	tt.m[t.id] = t
	return nil
}

// get returns the task of id this replica holds, or nil.
func (tt *taskTable) get(id string) *Task {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.m[id]
}

// remove forgets t.
func (tt *taskTable) remove(t *Task) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.m[t.id] == t {
		delete(tt.m, t.id)
	}
}

// sweep forgets the tasks whose time to live ended, and returns how many.
func (tt *taskTable) sweep(now time.Time) int {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	n := 0
	for id, t := range tt.m {
		if t.expired(now) {
			delete(tt.m, id)
			n++
		}
	}
	return n
}

// all returns every task held.
func (tt *taskTable) all() []*Task {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	out := make([]*Task, 0, len(tt.m))
	for _, t := range tt.m {
		out = append(out, t)
	}
	return out
}

// A taskReadCache holds the records of other replicas' tasks this
// replica read lately, and merges concurrent reads of one.
type taskReadCache struct {
	group singleflight.Group
	mu    sync.Mutex
	m     map[string]cachedTask
}

// A cachedTask is a record read, and when.
type cachedTask struct {
	v  taskView
	at time.Time
}
