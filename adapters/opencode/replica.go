package opencode

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"

	"github.com/bridge-dev/bridge/adapters/internal/findfiles"
)

// The fork server keeps its sessions in a database of its own, in memory
// (OPENCODE_DB=:memory:): two OpenCode processes writing one SQLite file
// made the live server wait on the fork's writes (OpenCode's busy handler
// sleeps 1 to 100 ms at a time while the other process holds the write
// lock, and a fork server at nice 10 holds it longer on a busy machine).
// A session is forked there from a replica: the live session's events,
// read from OpenCode's database without writing or waiting on it, and
// replayed on the fork server through OpenCode's own sync route (POST
// /sync/replay, which validates that each event follows the last), a
// session's new events only once the replica holds the older ones.

// replayBatch is how many events one POST /sync/replay carries.
const replayBatch = 200

// databasePath is the database the live server writes: OPENCODE_DB when
// Config.Env sets it (absolute, or relative to the data folder), else
// opencode.db in the data folder.
func (h *Host) databasePath() string {
	if p := findfiles.Env(h.cfg.Env, "OPENCODE_DB"); p != "" {
		if filepath.IsAbs(p) || p == ":memory:" {
			return p
		}
		return filepath.Join(h.dataDir(), p)
	}
	return filepath.Join(h.dataDir(), databaseName)
}

// syncEvent is one event of OpenCode's sync log, as POST /sync/replay
// takes it.
type syncEvent struct {
	ID          string          `json:"id"`
	AggregateID string          `json:"aggregateID"`
	Seq         int64           `json:"seq"`
	Type        string          `json:"type"`
	Data        json.RawMessage `json:"data"`
}

// replayBody is POST /sync/replay's body.
type replayBody struct {
	Directory string      `json:"directory"`
	Events    []syncEvent `json:"events"`
}

// liveEvents reads the events of session id after seq from the live
// server's database, opened read-only: a reader of a database in WAL mode
// neither waits for the writer nor makes it wait.
func (h *Host) liveEvents(ctx context.Context, id string, after int64) ([]syncEvent, error) {
	path := h.databasePath()
	if path == ":memory:" {
		return nil, fmt.Errorf("opencode: the live server's database is in memory")
	}
	dsn := (&url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: "mode=ro&_pragma=busy_timeout(5000)"}).String()
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("opencode: open the live database: %w", err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT id, seq, type, data FROM event WHERE aggregate_id = ? AND seq > ? ORDER BY seq`, id, after)
	if err != nil {
		return nil, fmt.Errorf("opencode: read the session's events: %w", err)
	}
	defer rows.Close()
	var out []syncEvent
	for rows.Next() {
		e := syncEvent{AggregateID: id}
		var data string
		if err := rows.Scan(&e.ID, &e.Seq, &e.Type, &data); err != nil {
			return nil, fmt.Errorf("opencode: read the session's events: %w", err)
		}
		e.Data = json.RawMessage(data)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("opencode: read the session's events: %w", err)
	}
	return out, nil
}

// replicate brings fork server fs's replica of session id (of folder dir)
// up to the live database: it replays the events the replica lacks. A
// replay the fork server refuses (its replica is not the prefix the
// Host remembers) is made again from a fresh replica.
func (h *Host) replicate(ctx context.Context, fs *server, id, dir string) error {
	h.replMu.Lock()
	defer h.replMu.Unlock()
	if h.replSrv != fs {
		h.replSrv, h.replSeq = fs, map[string]int64{}
	}
	seq, ok := h.replSeq[id]
	if !ok {
		seq = -1
	}
	err := h.replay(ctx, fs, id, dir, seq)
	if err == nil || seq < 0 {
		return err
	}
	delete(h.replSeq, id)
	_ = h.do(ctx, fs, http.MethodDelete, "/session/"+url.PathEscape(id), dirQuery(dir), nil, nil)
	return h.replay(ctx, fs, id, dir, -1)
}

// replay sends the events of session id after seq to fs, in batches,
// and remembers the last one replayed. Called with replMu held.
func (h *Host) replay(ctx context.Context, fs *server, id, dir string, seq int64) error {
	events, err := h.liveEvents(ctx, id, seq)
	if err != nil {
		return err
	}
	for len(events) > 0 {
		n := min(len(events), replayBatch)
		if err := h.do(ctx, fs, http.MethodPost, "/sync/replay", dirQuery(dir),
			replayBody{Directory: dir, Events: events[:n]}, nil); err != nil {
			return fmt.Errorf("opencode: replay session %s on the fork server: %w", id, err)
		}
		h.replSeq[id] = events[n-1].Seq
		events = events[n:]
	}
	return nil
}

// forkEnv is the fork server's environment on top of the live server's:
// its own database, in memory.
var forkEnv = []string{"OPENCODE_DB=:memory:"}
