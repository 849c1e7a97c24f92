package migrate

import (
	"context"
	"fmt"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/handoff"
	"github.com/bridge-dev/bridge/schema"
)

// sourceSession resolves a migration's source: a recorded session by id,
// or one named on its harness (schema.MigrationSource), which is adopted
// into the record when Bridge does not have it yet.
func (s *Migrator) sourceSession(ctx context.Context, req schema.MigrationPreviewParams) (core.Session, error) {
	if req.Source == nil {
		return s.session(ctx, req.SessionID)
	}
	if req.SessionID != "" {
		return core.Session{}, core.InvalidField("source", "name the source by sessionId or by source, not both")
	}
	if req.Source.Harness == "" || req.Source.NativeSessionID == "" {
		return core.Session{}, core.InvalidField("source", "source needs harness and nativeSessionId")
	}
	return s.adopt(ctx, req.Source.Harness, req.Source.NativeSessionID)
}

// adopt returns the recorded session of a harness's session, recording it
// first when Bridge did not create it (it exists only on the harness).
// What the migration fold needs is read from the harness: its
// historyWindow in one read carrying the whole fold budget
// (handoff.MaxMessages messages) where the probe shows it, else its
// history, cut to the same window. The window is recorded as an imported
// session (entries keyed by their native ids); the harness's session is
// not changed. A session Bridge already records is taken as recorded.
func (s *Migrator) adopt(ctx context.Context, harness, native string) (core.Session, error) {
	h, err := s.opts.Hosts.Get(harness)
	if err != nil {
		return core.Session{}, err
	}
	if sess, err := s.opts.Store.FindSessionByNative(ctx, harness, native); err == nil {
		return sess, nil
	} else if core.ErrorCode(err) != core.CodeNotFound {
		return core.Session{}, err
	}
	if err := s.opts.Hosts.Require(ctx, h, "migration of a session Bridge did not create", core.CapSessionList, core.CapSessionHistory); err != nil {
		return core.Session{}, err
	}
	rows, err := h.ListSessions(ctx, "")
	if err != nil {
		return core.Session{}, fmt.Errorf("list %s's sessions: %w", harness, err)
	}
	var row *core.HostSession
	for i := range rows {
		if rows[i].NativeID == native {
			row = &rows[i]
		}
	}
	if row == nil {
		return core.Session{}, core.NotFound(harness+" session", native)
	}
	var entries []core.NewEntry
	more := false
	if w, ok := h.(core.HistoryWindower); ok && s.opts.Hosts.Capabilities(ctx, h).Has(core.CapHistoryWindow) {
		entries, more, err = w.HistoryWindow(ctx, native, handoff.MaxMessages)
	} else {
		entries, err = h.History(ctx, native)
		entries, more = window(entries, handoff.MaxMessages)
	}
	if err != nil {
		return core.Session{}, fmt.Errorf("read %s session %s: %w", harness, native, err)
	}
	if more {
		entries = append([]core.NewEntry{{Kind: core.KindHarnessEvent, NativeID: native + "#bridge-window",
			Payload: core.Payload(windowNote{Type: "bridge/window", MaxMessages: handoff.MaxMessages,
				Note: "older history was not read: the migration fold needs only the newest messages"})}}, entries...)
	}
	title := row.Title
	if title == "" {
		title = harness + " " + native
	}
	out, err := s.opts.Library.RecordImported(ctx, harness, core.ImportedSession{NativeID: native, Cwd: row.Cwd, Title: title, Entries: entries},
		title, native)
	if err != nil {
		return core.Session{}, err
	}
	return s.opts.Store.GetSession(ctx, out.SessionID)
}

// window keeps the newest maxMessages user and assistant messages of
// entries and what lies between them (the fold's budget, as a host's
// historyWindow would cut it); more says whether anything was left out.
func window(entries []core.NewEntry, maxMessages int) ([]core.NewEntry, bool) {
	seen := 0
	for i := len(entries) - 1; i >= 0; i-- {
		if k := entries[i].Kind; k == core.KindUserMessage || k == core.KindAssistantMessage {
			seen++
			if seen == maxMessages {
				return entries[i:], i > 0
			}
		}
	}
	return entries, false
}

// windowNote is the harness.event an adopted session's record starts with
// when only the newest part of its history was read.
type windowNote struct {
	Type        string `json:"type"`
	MaxMessages int    `json:"maxMessages"`
	Note        string `json:"note"`
}
