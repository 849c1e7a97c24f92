package acp

import (
	"context"
	"encoding/json"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/schema"
)

// send writes one session/update.
func (s *Server) send(sessionID string, u update) {
	if err := s.c.notify("session/update", sessionUpdateParams{SessionID: sessionID, Update: u}); err != nil {
		s.log.Debug("acp: writing an update", "error", err)
	}
}

// EntryAppended implements service.Notifier: a recorded entry of a session
// this client opened becomes its session/update(s).
func (s *Server) EntryAppended(e core.Entry) {
	ss := s.opened(e.SessionID)
	if ss == nil {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, u := range ss.view.updatesFor(e, false) {
		s.send(e.SessionID, u)
	}
}

var _ service.SessionNotifier = (*Server)(nil)

// SessionChanged implements service.SessionNotifier: a session this
// client opened that was renamed, archived or moved to another branch,
// here or by another process sharing the record, is ACP's
// session_info_update: its title (null when it has none), and in
// _meta.bridge its archive flag and the entry its active branch ends at.
// Sessions the client did not open are not its concern (as for
// session/update).
func (s *Server) SessionChanged(n schema.SessionChangedNotification) {
	ss := s.opened(n.SessionID)
	if ss == nil {
		return
	}
	u := sessionInfoUpdate{SessionUpdate: "session_info_update",
		Meta: inBridge(sessionState{Archived: n.Archived, HeadID: n.HeadID})}
	if n.Title != "" {
		u.Title = &n.Title
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if err := s.c.notify("session/update", sessionInfoParams{SessionID: n.SessionID, Update: u}); err != nil {
		s.log.Debug("acp: writing a session_info_update", "error", err)
	}
}

// ContextCompacted implements service.Notifier (the context.compacted entry
// itself is shown).
func (s *Server) ContextCompacted(service.ContextCompacted) {}

// CheckpointSaved implements service.Notifier; a checkpoint a client asked
// for is reported by its command.
func (s *Server) CheckpointSaved(service.CheckpointSaved) {}

// Restored implements service.Notifier: how a session came back is the
// first thing its client is told, in text and in _meta.
func (s *Server) Restored(r service.Restored) {
	if s.opened(r.SessionID) == nil {
		return
	}
	text := "[Bridge] Session restored: " + string(r.Mode)
	if r.Reason != "" {
		text += " (" + r.Reason + ")"
	}
	u := chunk("agent_message_chunk", text+"\n")
	u.Meta = restoreMeta(r)
	s.send(r.SessionID, u)
}

// Gauge implements service.GaugeNotifier: a context reading of a session
// this client opened is its usage_update (the context gauge).
func (s *Server) Gauge(sessionID string, g core.Gauge) {
	sess := s.opened(sessionID)
	if g.Size <= 0 || g.Used < 0 || sess == nil {
		return
	}
	sess.noteGauge(g)
	s.send(sessionID, update{SessionUpdate: "usage_update", Used: &g.Used, Size: &g.Size})
}

// Log implements service.Notifier: the service's messages go to the log.
func (s *Server) Log(level int, msg string) {
	switch level {
	case 1:
		s.log.Error(msg)
	case 2:
		s.log.Warn(msg)
	case 3:
		s.log.Info(msg)
	default:
		s.log.Debug(msg)
	}
}

// RequestPermission implements service.PermissionAsker: the harness's
// question goes to the client as session/request_permission, with ACP's
// own option kinds, and the chosen option's id comes back ("" when the
// client answered "cancelled").
func (s *Server) RequestPermission(ctx context.Context, p service.PermissionRequest) (string, error) {
	if s.opened(p.SessionID) == nil {
		return "", core.Errorf(core.CodeUnavailable, "session %s is not open in this ACP connection", p.SessionID)
	}
	r := p.Request
	tc := permissionToolCall{ToolCallID: r.ToolCallID, Title: r.Title, Status: "pending", Kind: r.Kind}
	if len(r.RawInput) > 0 && json.Valid(r.RawInput) {
		tc.RawInput = r.RawInput
	}
	opts := make([]permissionOption, 0, len(r.Options))
	for _, o := range r.Options {
		opts = append(opts, permissionOption{OptionID: o.ID, Name: o.Name, Kind: string(o.Kind)})
	}
	var res struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	if err := s.c.call(ctx, "session/request_permission", requestPermissionParams{SessionID: p.SessionID, ToolCall: tc, Options: opts}, &res); err != nil {
		return "", err
	}
	switch res.Outcome.Outcome {
	case "cancelled":
		return "", nil
	case "selected":
		if res.Outcome.OptionID == "" {
			return "", core.Errorf(core.CodeInvalid, "session/request_permission: outcome \"selected\" without an optionId")
		}
		return res.Outcome.OptionID, nil
	}
	return "", core.Errorf(core.CodeInvalid, "session/request_permission: outcome %q is not \"selected\" or \"cancelled\"", res.Outcome.Outcome)
}
