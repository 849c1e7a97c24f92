package record

import (
	"sync"

	"github.com/bridge-dev/bridge/core"
)

// ErrWriterDone is the error of a writer's call made after its
// transaction ended.
var ErrWriterDone = core.Errorf(core.CodeInvalid, "writer used after its transaction ended")

// Gate guards a core.Writer that lives as long as one transaction: its
// calls run one at a time, and a call after Close fails with
// ErrWriterDone. The zero value is open.
type Gate struct {
	mu   sync.Mutex
	done bool
}

// Close ends the writer: later calls fail.
func (g *Gate) Close() {
	g.mu.Lock()
	g.done = true
	g.mu.Unlock()
}

// Do runs fn as one call of the writer g guards.
func Do[T any](g *Gate, fn func() (T, error)) (T, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		var zero T
		return zero, ErrWriterDone
	}
	return fn()
}

// Run is Do for a call without a result.
func Run(g *Gate, fn func() error) error {
	_, err := Do(g, func() (struct{}, error) { return struct{}{}, fn() })
	return err
}
