// Package procutil holds what the adapters that run a harness program
// share: the tail of its standard error, and its process group.
package procutil

import (
	"strings"
	"sync"
)

// TailSize is how much of a harness's standard error ExitInfo keeps.
const TailSize = 2048

// Tail is an io.Writer that keeps the last TailSize bytes written to it.
// It is safe for concurrent use.
type Tail struct {
	mu  sync.Mutex
	buf []byte
}

// Write keeps the end of what was written.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - TailSize; over > 0 {
		t.buf = append([]byte(nil), t.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept bytes.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// EnvNames returns the names of KEY=VALUE pairs, comma-separated, for
// diagnostics: a configured environment may hold secrets, so its values are
// never shown.
func EnvNames(env []string) string {
	names := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	return strings.Join(names, ", ")
}
