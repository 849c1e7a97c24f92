package codex

import (
	"fmt"
	"os"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
	"github.com/bridge-dev/bridge/core"
)

// sideDBPrefix starts the name of a side process's database folder under
// Config.StateDir; the Bridge process's id follows, then a random part.
const sideDBPrefix = "fork-sqlite-"

// sideDBDir makes a fresh folder (owner-only) under Config.StateDir for a
// side process's SQLite databases. Codex's thread store projects a thread's
// rollout into its SQLite database: a side process that forks the live
// thread from the same database projects the live thread there as the live
// process appends to it (Codex then refuses the fork: "thread history
// projection ... is behind durable rollout", and a new process had to be
// started beside the live turn) and takes the database's write lock. With
// its own databases it reads only the live thread's rollout file. The
// first call also removes the folders that Bridge processes no longer
// running left behind.
func (h *Host) sideDBDir() (string, error) {
	dir := h.cfg.StateDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", core.E(core.CodeUnavailable, "codex: the fork's database folder", err)
	}
	h.sweep.Do(func() { procutil.SweepEndedDirs(dir, sideDBPrefix) })
	d, err := os.MkdirTemp(dir, fmt.Sprintf("%s%d-", sideDBPrefix, os.Getpid()))
	if err != nil {
		return "", core.E(core.CodeUnavailable, "codex: the fork's database folder", err)
	}
	return d, nil
}

// sidePriority says, for doctor, how a side process runs.
func (h *Host) sidePriority() string {
	if h.cfg.StateDir == "" {
		return "nice 10, on CODEX_HOME's databases"
	}
	if err := procutil.IdleScheduling(); err != nil {
		return "nice 10, with databases of its own; the idle scheduling class was refused: " + err.Error()
	}
	return "idle scheduling class and nice 10, with databases of its own"
}

// spareText says, for doctor, how an idle side process is kept.
func (h *Host) spareText() string {
	switch d := h.cfg.SpareIdle; {
	case d < 0:
		return "stopped after each fork"
	case d == 0:
		d = DefaultSpareIdle
		fallthrough
	default:
		return "kept for the session's next fork until idle for " + d.String()
	}
}
