package dsh

import "context"

// AwaitForkServer starts h's fork server if needed and waits until it
// answers.
func AwaitForkServer(ctx context.Context, h *Host) error { return h.awaitForkServer(ctx) }

// ForkServerPID is the running fork server's process id (0: none).
func ForkServerPID(h *Host) int {
	h.forks.mu.Lock()
	defer h.forks.mu.Unlock()
	if h.forks.cur == nil || h.forks.cur.dead() {
		return 0
	}
	return h.forks.cur.p.Cmd.Process.Pid
}

// ForkServerHome is the running fork server's DSH_HOME ("" when none).
func ForkServerHome(h *Host) string {
	h.forks.mu.Lock()
	defer h.forks.mu.Unlock()
	if h.forks.cur == nil {
		return ""
	}
	return h.forks.cur.home
}

// LogCopy is a fork server's copy of a session's log (forkcopy.go).
type LogCopy = logCopy

// NewLogCopy is newLogCopy.
func NewLogCopy(src, dst string) *LogCopy { return newLogCopy(src, dst, "", "") }

// Update is update.
func (c *LogCopy) Update(ctx context.Context) (int64, error) { return c.update(ctx) }

// SetMaxForksPerServer sets how many forks a fork server makes before it
// is replaced, until the returned function restores it.
func SetMaxForksPerServer(n int) (restore func()) {
	old := maxForksPerServer
	maxForksPerServer = n
	return func() { maxForksPerServer = old }
}
