package opencode

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/bridge-dev/bridge/adapters/internal/findfiles"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/inputfile"

	// The database/sql driver "sqlite3", to read OpenCode's database.
	_ "github.com/ncruces/go-sqlite3/driver"
)

var (
	_ core.TranscriptSource = (*Host)(nil)
	_ core.MultiImporter    = (*Host)(nil)
)

// databaseName is the file OpenCode keeps its sessions in, under its data
// folder.
const databaseName = "opencode.db"

// dataDir is OpenCode's data folder: <Home>/.local/share/opencode when Home
// is configured, else $XDG_DATA_HOME/opencode (from Config.Env or the
// environment), else ~/.local/share/opencode.
func (h *Host) dataDir() string {
	if h.cfg.Home != "" {
		return filepath.Join(h.cfg.Home, ".local", "share", "opencode")
	}
	if x := findfiles.Env(h.cfg.Env, "XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "opencode")
	}
	return filepath.Join(findfiles.Home(h.cfg.Env), ".local", "share", "opencode")
}

// Transcripts lists OpenCode's database, which holds all its sessions.
func (h *Host) Transcripts(ctx context.Context) (core.TranscriptList, error) {
	root := h.dataDir()
	files, err := findfiles.Under(ctx, root, 1, func(rel string) bool { return rel == databaseName })
	return core.TranscriptList{Roots: []string{root}, Files: files}, err
}

// ImportAll reads every session of OpenCode's database at path, one at a
// time, streaming each to record (core.MultiImporter). The database (and
// its write-ahead log, when there is one) is first copied to a private
// folder under Bridge's data directory and read there, so that nothing of
// OpenCode's is opened for writing or locked. Each session maps to entries
// exactly as an `opencode export` of it would.
func (h *Host) ImportAll(ctx context.Context, path string, record func(read core.ImportReader) error) error {
	if h.cfg.CopyDir == "" {
		return core.Errorf(core.CodeUnsupported, "opencode: no private folder to copy the database into")
	}
	if err := os.MkdirAll(h.cfg.CopyDir, 0o700); err != nil {
		return fmt.Errorf("opencode: %w", err)
	}
	tmp, err := os.MkdirTemp(h.cfg.CopyDir, "db-copy-")
	if err != nil {
		return fmt.Errorf("opencode: %w", err)
	}
	defer os.RemoveAll(tmp)
	copyDB := filepath.Join(tmp, databaseName)
	if err := copyFile(ctx, path, copyDB, true); err != nil {
		return err
	}
	if err := copyFile(ctx, path+"-wal", copyDB+"-wal", false); err != nil {
		return err
	}
	dsn := (&url.URL{Scheme: "file", OmitHost: true, Path: copyDB, RawQuery: "_pragma=busy_timeout(5000)"}).String()
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return fmt.Errorf("opencode: open the database copy: %w", err)
	}
	defer db.Close()
	return readSessions(ctx, db, record)
}

// copyFile copies src (a regular file, bounded) to dst with mode 0600; a
// missing src is an error only when required.
func copyFile(ctx context.Context, src, dst string, required bool) error {
	in, err := inputfile.Open(ctx, src, "opencode database", 0)
	if err != nil {
		if !required && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if !required && core.ErrorCode(err) == core.CodeNotFound {
			return nil
		}
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("opencode: copy the database: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("opencode: copy the database: %w", err)
	}
	return out.Close()
}

// readSessions maps every session of the database (OpenCode's tables
// session, message and part; message and part rows keep their object in
// data, without their ids), oldest first, handing each to record as a
// reader that streams it a message at a time.
func readSessions(ctx context.Context, db *sql.DB, record func(read core.ImportReader) error) error {
	rows, err := db.QueryContext(ctx, `SELECT id, directory, title FROM session ORDER BY time_created, id`)
	if err != nil {
		return core.E(core.CodeInvalid, "opencode: not an OpenCode database (no session table)", err)
	}
	type sess struct{ id, dir, title string }
	var ss []sess
	for rows.Next() {
		var s sess
		if err := rows.Scan(&s.id, &s.dir, &s.title); err != nil {
			rows.Close()
			return core.E(core.CodeInvalid, "opencode: read sessions", err)
		}
		ss = append(ss, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return core.E(core.CodeInvalid, "opencode: read sessions", err)
	}
	// The copy is Bridge's own: an index lets each message's parts be read
	// on their own (best effort; without it the reads only take longer).
	_, _ = db.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS bridge_part_message ON part (message_id, time_created, id)`)
	for _, s := range ss {
		err := record(func(sink core.ImportSink) (core.ImportedSession, error) {
			b := &core.ImportBatcher{Sink: sink, Head: core.ImportedSession{NativeID: s.id, Cwd: s.dir, Title: s.title}}
			mm := newMessageMapper(func(e core.NewEntry) { _ = b.Add(e) })
			model, err := streamMessages(ctx, db, s.id, func(sm storedMessage) error {
				mm.message(sm)
				return b.Err()
			})
			if err != nil {
				return core.ImportedSession{}, err
			}
			b.Head.Model = model
			if err := b.Flush(); err != nil {
				return core.ImportedSession{}, err
			}
			return b.Head, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// streamMessages rebuilds a session's messages with their parts, in the
// shape `opencode export` writes, one message at a time, and returns the
// model of its newest assistant message.
func streamMessages(ctx context.Context, db *sql.DB, sessionID string, fn func(storedMessage) error) (string, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id`, sessionID)
	if err != nil {
		return "", core.E(core.CodeInvalid, "opencode: read messages", err)
	}
	type msg struct {
		id   string
		info json.RawMessage
	}
	var msgs []msg // message heads only; parts are read one message at a time
	model := ""
	for rows.Next() {
		var id, data string
		if err := rows.Scan(&id, &data); err != nil {
			rows.Close()
			return "", core.E(core.CodeInvalid, "opencode: read messages", err)
		}
		info, err := withIDs(data, map[string]string{"id": id, "sessionID": sessionID})
		if err != nil {
			rows.Close()
			return "", core.E(core.CodeInvalid, fmt.Sprintf("opencode: message %s", id), err)
		}
		var m struct {
			Role       string `json:"role"`
			ModelID    string `json:"modelID"`
			ProviderID string `json:"providerID"`
		}
		if json.Unmarshal(info, &m) == nil && m.Role == "assistant" && m.ModelID != "" {
			model = modelName(m.ProviderID, m.ModelID)
		}
		msgs = append(msgs, msg{id, info})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", core.E(core.CodeInvalid, "opencode: read messages", err)
	}
	for _, m := range msgs {
		if err := ctx.Err(); err != nil {
			return "", core.E(core.CodeCancelled, "opencode: read messages", err)
		}
		sm := storedMessage{Info: m.info}
		prow, err := db.QueryContext(ctx, `SELECT id, data FROM part WHERE session_id = ? AND message_id = ? ORDER BY time_created, id`, sessionID, m.id)
		if err != nil {
			return "", core.E(core.CodeInvalid, "opencode: read parts", err)
		}
		for prow.Next() {
			var id, data string
			if err := prow.Scan(&id, &data); err != nil {
				prow.Close()
				return "", core.E(core.CodeInvalid, "opencode: read parts", err)
			}
			p, err := withIDs(data, map[string]string{"id": id, "sessionID": sessionID, "messageID": m.id})
			if err != nil {
				prow.Close()
				return "", core.E(core.CodeInvalid, fmt.Sprintf("opencode: part %s", id), err)
			}
			sm.Parts = append(sm.Parts, p)
		}
		prow.Close()
		if err := prow.Err(); err != nil {
			return "", core.E(core.CodeInvalid, "opencode: read parts", err)
		}
		if err := fn(sm); err != nil {
			return "", err
		}
	}
	return model, nil
}

// withIDs adds the id members a row keeps in columns to its data object.
func withIDs(data string, ids map[string]string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(data), &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("data is not a JSON object: %v", err)
	}
	for k, v := range ids {
		b, _ := json.Marshal(v)
		obj[k] = b
	}
	return json.Marshal(obj)
}
