// Package pending tracks requests an adapter is waiting on, by id, so that a
// harness's own "resolved" or "replied" event can withdraw one.
package pending

import (
	"context"
	"sync"
)

// Set holds the cancel function of each open request. The zero value is
// ready to use; it is safe for concurrent use.
type Set struct {
	mu   sync.Mutex
	open map[string]context.CancelFunc
}

// Add records request id with its cancel function; false when id is
// already open (the earlier one is kept).
func (s *Set) Add(id string, cancel context.CancelFunc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		s.open = map[string]context.CancelFunc{}
	}
	if _, dup := s.open[id]; dup {
		return false
	}
	s.open[id] = cancel
	return true
}

// Remove forgets request id (it was answered).
func (s *Set) Remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, id)
}

// Cancel withdraws request id: it is forgotten and its cancel function
// called, if it was open.
func (s *Set) Cancel(id string) {
	s.mu.Lock()
	c := s.open[id]
	delete(s.open, id)
	s.mu.Unlock()
	if c != nil {
		c()
	}
}
