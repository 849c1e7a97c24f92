package acp

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/schema"
)

// open marks a session as this client's, so its updates reach it.
func (s *Server) open(id, cwd string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil {
		ss = &session{view: newView(s.compaction), cwd: cwd}
		s.sessions[id] = ss
	}
	return ss
}

func (s *Server) opened(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// sessionSetup are the params of session/new, load, resume and fork.
type sessionSetup struct {
	SessionID  string            `json:"sessionId"`
	Cwd        string            `json:"cwd"`
	McpServers []json.RawMessage `json:"mcpServers"`
}

// setup reads the params of session/new, load, resume or fork (needID:
// the session is named).
func (s *Server) setup(params json.RawMessage, needID bool) (sessionSetup, error) {
	var p sessionSetup
	if err := decode(params, &p); err != nil {
		return p, err
	}
	if err := p.check(needID); err != nil {
		return p, err
	}
	s.warnMCP(p.McpServers)
	return p, nil
}

func (p sessionSetup) check(needID bool) error {
	if needID && p.SessionID == "" {
		return badParams("sessionId is required")
	}
	if p.Cwd != "" && !filepath.IsAbs(p.Cwd) {
		return badParams("cwd %q must be an absolute path", p.Cwd)
	}
	return nil
}

func (s *Server) newSession(ctx context.Context, params json.RawMessage) (any, error) {
	p, err := s.setup(params, false)
	if err != nil {
		return nil, err
	}
	if p.Cwd == "" {
		return nil, badParams("cwd is required")
	}
	if s.opts.Harness == "" {
		return nil, core.Errorf(core.CodeInvalid, "session/new: no harness: start bridge acp with --harness")
	}
	r, err := s.b.SessionCreate(ctx, schema.SessionCreateParams{Harness: s.opts.Harness, Cwd: p.Cwd,
		Preset: s.opts.Preset, Model: s.opts.Model})
	if err != nil {
		return nil, err
	}
	s.open(r.SessionID, p.Cwd)
	res := sessionResult{SessionID: r.SessionID, ConfigOptions: s.configOptions(ctx, r.SessionID),
		Meta: inBridge(newSessionMeta{Harness: r.Harness, NativeSessionID: r.NativeSessionID})}
	return afterReply{result: res, then: func() { s.announceCommands(r.SessionID) }}, nil
}

// warnMCP says that MCP servers the client offers are not handed on: each
// harness takes its own MCP configuration.
func (s *Server) warnMCP(servers []json.RawMessage) {
	if len(servers) > 0 {
		s.log.Warn("acp: the client's MCP servers are not passed to the harness; configure them in the harness", "count", len(servers))
	}
}

// loadSession replays the session's record as updates, then brings its
// harness back (hot, native or from a checkpoint), which the restoration
// notice says.
func (s *Server) loadSession(ctx context.Context, params json.RawMessage) (any, error) {
	p, err := s.setup(params, true)
	if err != nil {
		return nil, err
	}
	entries, err := s.wholeHistory(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	ss := s.open(p.SessionID, p.Cwd)
	ss.mu.Lock()
	ss.view = newView(s.compaction)
	for _, e := range entries {
		for _, u := range ss.view.updatesFor(e, true) {
			s.send(p.SessionID, u)
		}
	}
	ss.mu.Unlock()
	res, err := s.resumeOpened(ctx, p.SessionID)
	var held *core.LiveElsewhereError
	if err != nil && errors.As(err, &held) {
		// Another Bridge process runs the session's harness: the client
		// has its history, and the answer says why it cannot drive it here
		// (a prompt is refused with live_elsewhere until that process
		// lets go, then resumes it).
		return metaResult[restoration]{Meta: inBridge(restoration{
			RestoreMode: "live_elsewhere", Reason: err.Error()})}, nil
	}
	return res, err
}

// resumeOpened resumes an opened session and answers load/resume.
func (s *Server) resumeOpened(ctx context.Context, id string) (any, error) {
	r, err := s.b.SessionResume(ctx, schema.SessionResumeParams{SessionID: id})
	if err != nil {
		return nil, err
	}
	res := sessionResult{ConfigOptions: s.configOptions(ctx, id), Meta: restoreMeta(service.Restored(r))}
	return afterReply{result: res, then: func() { s.announceCommands(id) }}, nil
}

// wholeHistory reads a session's active branch, oldest first.
func (s *Server) wholeHistory(ctx context.Context, id string) ([]core.Entry, error) {
	var pages [][]schema.Entry
	var before *int64
	for {
		h, err := s.b.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: id, BeforeSeq: before, MaxMessages: 200})
		if err != nil {
			return nil, err
		}
		pages = append(pages, h.Entries)
		if !h.HasMore || len(h.Entries) == 0 {
			break
		}
		seq := h.Entries[0].Seq
		before = &seq
	}
	var out []core.Entry
	for i := len(pages) - 1; i >= 0; i-- {
		for _, e := range pages[i] {
			out = append(out, core.Entry{ID: e.ID, SessionID: e.SessionID, ParentID: e.ParentID, Seq: e.Seq,
				Kind: core.Kind(e.Kind), Payload: e.Payload, NativeID: e.NativeID, CreatedAt: e.CreatedAt})
		}
	}
	return out, nil
}

func (s *Server) resumeSession(ctx context.Context, params json.RawMessage) (any, error) {
	p, err := s.setup(params, true)
	if err != nil {
		return nil, err
	}
	s.open(p.SessionID, p.Cwd)
	return s.resumeOpened(ctx, p.SessionID)
}

func (s *Server) forkSession(ctx context.Context, params json.RawMessage) (any, error) {
	p, err := s.setup(params, true)
	if err != nil {
		return nil, err
	}
	r, err := s.b.SessionFork(ctx, schema.SessionForkParams{SessionID: p.SessionID, Cwd: p.Cwd})
	if err != nil {
		return nil, err
	}
	s.open(r.SessionID, p.Cwd)
	res := sessionResult{SessionID: r.SessionID, ConfigOptions: s.configOptions(ctx, r.SessionID),
		Meta: inBridge(forkMeta{Harness: r.Harness, ForkedFrom: r.Origin.SessionID, ForkedAt: r.Origin.EntryID})}
	return afterReply{result: res, then: func() { s.announceCommands(r.SessionID) }}, nil
}

func (s *Server) listSessions(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		Cwd    string `json:"cwd"`
		Cursor string `json:"cursor"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	r, err := s.b.SessionList(ctx, schema.SessionListParams{Cursor: p.Cursor})
	if err != nil {
		return nil, err
	}
	res := listResult{Sessions: []sessionInfo{}, NextCursor: r.NextCursor}
	for _, it := range r.Items {
		if p.Cwd != "" && filepath.Clean(it.Cwd) != filepath.Clean(p.Cwd) {
			continue
		}
		res.Sessions = append(res.Sessions, sessionInfo{SessionID: it.SessionID, Cwd: it.Cwd, Title: it.Title,
			UpdatedAt: it.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
			Meta:      inBridge(sessionBits{Harness: it.Harness, Status: string(it.Status)})})
	}
	return res, nil
}

// closeSession stops the session's harness the way an idle suspension
// does (a checkpoint first, when there is work to keep), and stops sending
// its updates.
func (s *Server) closeSession(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" {
		return nil, badParams("sessionId is required")
	}
	r, err := s.b.SessionSuspend(ctx, schema.SessionSuspendParams{SessionID: p.SessionID})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	delete(s.sessions, p.SessionID)
	s.mu.Unlock()
	return metaResult[closeMeta]{Meta: inBridge(closeMeta{Suspended: r.Suspended, CheckpointEntryID: r.CheckpointEntryID})}, nil
}

// configOptions are the session's model (and effort) choices as ACP
// session config options; nil when the harness lists no models.
func (s *Server) configOptions(ctx context.Context, id string) []configOption {
	m, err := s.b.SessionModels(ctx, schema.SessionModelsParams{SessionID: id})
	if err != nil || len(m.Models) == 0 {
		return nil
	}
	cur := m.Model
	var opts []configValue
	var efforts []string
	seen := map[string]bool{}
	for _, x := range m.Models {
		name := x.Name
		if name == "" {
			name = x.ID
		}
		opts = append(opts, configValue{Value: x.ID, Name: name})
		if cur == "" {
			cur = x.ID
		}
		if x.ID == cur {
			for _, e := range x.Efforts {
				if !seen[e] {
					seen[e] = true
					efforts = append(efforts, e)
				}
			}
		}
	}
	out := []configOption{{ID: "model", Name: "Model", Category: "model", Type: "select",
		CurrentValue: cur, Options: opts}}
	if len(efforts) > 0 {
		eopts := []configValue{}
		for _, e := range efforts {
			eopts = append(eopts, configValue{Value: e, Name: e})
		}
		eff := m.Effort
		if eff == "" {
			eff = efforts[0]
		}
		out = append(out, configOption{ID: "effort", Name: "Reasoning effort", Category: "thought_level",
			Type: "select", CurrentValue: eff, Options: eopts})
	}
	return out
}

func (s *Server) setConfigOption(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		SessionID string          `json:"sessionId"`
		ConfigID  string          `json:"configId"`
		Value     json.RawMessage `json:"value"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	var v string
	if json.Unmarshal(p.Value, &v) != nil || v == "" {
		return nil, badParams("value must be one of the option's values")
	}
	sel := schema.SessionSelectModelParams{SessionID: p.SessionID}
	switch p.ConfigID {
	case "model":
		sel.Model = v
	case "effort":
		sel.Effort = v
	default:
		return nil, badParams("configId %q is not an option of this session (model, effort)", p.ConfigID)
	}
	if _, err := s.b.SessionSelectModel(ctx, sel); err != nil {
		return nil, err
	}
	opts := s.configOptions(ctx, p.SessionID)
	if opts == nil {
		opts = []configOption{}
	}
	return configOptionsResult{ConfigOptions: opts}, nil
}

// setModel is the older, unstable session/set_model some clients still
// send.
func (s *Server) setModel(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModelID   string `json:"modelId"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if p.ModelID == "" {
		return nil, badParams("modelId is required")
	}
	if _, err := s.b.SessionSelectModel(ctx, schema.SessionSelectModelParams{SessionID: p.SessionID, Model: p.ModelID}); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}
