package dshtest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

type goal struct {
	ID        string `json:"id"`
	Revision  int64  `json:"revision"`
	Objective string `json:"objective"`
	Phase     string `json:"phase"`
	MaxRounds int    `json:"maxGoalRounds"`
	Rounds    int    `json:"-"`
	CreatedAt int64  `json:"-"`
	UpdatedAt int64  `json:"-"`
}

type attachment struct{ mediaType, data string }

// session is one fake DSH session: its event log and head state.
type session struct {
	id, cwd, preset, title string
	provider, model        string
	effort                 string
	events                 []event
	surface                []int64 // seqs of the surface nodes
	tokens                 map[int64]int
	goal                   *goal
	turn                   int
	running                bool
	cancel                 chan struct{}
	queue                  chan func()
	attachments            map[string]attachment
	updatedAt              int64
}

func uuid() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// event is one persistence event as session.history returns it. Members
// are in name order, as DSH's recorded events (and the map this replaced)
// have them.
type event struct {
	Data any   `json:"data"`
	Seq  int64 `json:"seq"`
	*placement
	Time int64  `json:"time"`
	Type string `json:"type"`
}

// placement is where a message event lands on the surface, and the events
// it came from; only message events carry it.
type placement struct {
	SourceEventSeqs []int64 `json:"sourceEventSeqs,omitempty"`
	SurfaceOp       any     `json:"surfaceOp"`
}

// appendEvent writes one event with the next seq; s.mu is held.
func (ss *session) appendEvent(typ string, data any, at *placement) int64 {
	seq := int64(len(ss.events))
	ss.events = append(ss.events, event{Type: typ, Seq: seq, Time: now(), Data: data, placement: at})
	ss.updatedAt = now()
	return seq
}

func (s *Server) get(id string) (*session, *rpcError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil {
		return nil, &rpcError{Code: "session-not-found", Message: fmt.Sprintf("session %q not found", id)}
	}
	return ss, nil
}

type sessionArg struct {
	SessionID string `json:"sessionId"`
}

func (s *Server) sessionCreate(_ string, payload json.RawMessage) (any, *rpcError) {
	var p struct {
		Cwd         string `json:"cwd"`
		AgentPreset string `json:"agentPreset"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	if p.Cwd == "" {
		return nil, errf("invalid-argument", "cwd is required")
	}
	if p.AgentPreset == "" {
		p.AgentPreset = "standard"
	}
	if !strings.Contains(string(s.replay["agentPreset.list"]), `"id":"`+p.AgentPreset+`"`) {
		return nil, errf("invalid-argument", "unknown agent preset %q", p.AgentPreset)
	}
	ss := &session{id: "session-" + uuid(), cwd: p.Cwd, preset: p.AgentPreset, provider: "deepseek-official",
		model: "deepseek-v4-flash", tokens: map[int64]int{}, queue: make(chan func(), 1024),
		attachments: map[string]attachment{}, updatedAt: now()}
	s.mu.Lock()
	ss.appendEvent("permission/preset", presetData{Preset: "workspace-write"}, nil)
	ss.appendEvent("sandbox/mode", modeData{Mode: "workspace-write"}, nil)
	ss.appendEvent("approval/policy", policyData{Policy: "ask"}, nil)
	s.sessions[ss.id] = ss
	s.order = append(s.order, ss.id)
	s.mu.Unlock()
	go func() {
		for f := range ss.queue {
			f()
		}
	}()
	return sessionCreated{SessionID: ss.id, AgentPreset: ss.preset}, nil
}

func (s *Server) projections(ss *session) projections {
	used := 1500
	for _, t := range ss.tokens {
		used += t
	}
	p := projections{AsOfSeq: len(ss.events) - 1}
	p.Values.Title = ss.title
	p.Values.ContextPressure = contextPressure{PressureTokens: used, ProjectedTokens: used, ContextWindow: 1000000}
	if g := ss.goal; g != nil {
		p.Values.Goal = &goalState{Goal: g, RoundsStarted: g.Rounds, CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt}
	}
	return p
}

func (s *Server) sessionList(string, json.RawMessage) (any, *rpcError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []sessionItem{}
	for _, id := range s.order {
		ss := s.sessions[id]
		if contains(s.archived, id) {
			continue
		}
		items = append(items, sessionItem{SessionID: id, UpdatedAt: ss.updatedAt, Running: ss.running,
			Blank: len(ss.surface) == 0, Cwd: ss.cwd, AgentPreset: ss.preset, Projections: s.projections(ss)})
	}
	return sessionList{Items: items}, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (s *Server) sessionHistory(_ string, payload json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID   string `json:"sessionId"`
		MaxMessages int    `json:"maxMessages"`
		BeforeSeq   *int64 `json:"beforeSeq"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	ss, e := s.get(p.SessionID)
	if e != nil {
		return nil, e
	}
	if p.MaxMessages <= 0 {
		p.MaxMessages = 60
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := ss.events
	if p.BeforeSeq != nil && *p.BeforeSeq < int64(len(evs)) {
		evs = evs[:max(*p.BeforeSeq, 0)]
	}
	// The window starts at the maxMessages-th message from the tail.
	cut, seen := 0, 0
	for i := len(evs) - 1; i >= 0; i-- {
		if t := evs[i].Type; t == "user/message" || t == "assistant/message" {
			seen++
			if seen == p.MaxMessages {
				cut = i
				break
			}
		}
	}
	out := make([]historyItem, 0, len(evs)-cut)
	for _, ev := range evs[cut:] {
		out = append(out, historyItem{Event: ev})
	}
	return history{Events: out, HasMore: cut > 0, Projections: s.projections(ss)}, nil
}

func (s *Server) sessionModels(_ string, payload json.RawMessage) (any, *rpcError) {
	var p sessionArg
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	var v map[string]any
	_ = json.Unmarshal(s.replay["session.models"], &v)
	if p.SessionID != "" {
		ss, e := s.get(p.SessionID)
		if e != nil {
			return nil, e
		}
		s.mu.Lock()
		v["current"] = currentModel{Provider: ss.provider, Model: ss.model, ReasoningEffort: ss.effort}
		s.mu.Unlock()
	}
	return v, nil
}

func (s *Server) sessionSelectModel(_ string, payload json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID       string `json:"sessionId"`
		Provider        string `json:"provider"`
		Model           string `json:"model"`
		ReasoningEffort string `json:"reasoningEffort"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	ss, e := s.get(p.SessionID)
	if e != nil {
		return nil, e
	}
	var cat struct {
		Groups []struct {
			ID     string `json:"id"`
			Models []struct {
				ID        string `json:"id"`
				Reasoning struct {
					Efforts []struct {
						ID string `json:"id"`
					} `json:"efforts"`
				} `json:"reasoning"`
			} `json:"models"`
		} `json:"groups"`
	}
	_ = json.Unmarshal(s.replay["session.models"], &cat)
	for _, g := range cat.Groups {
		for _, m := range g.Models {
			if g.ID != p.Provider || m.ID != p.Model {
				continue
			}
			ok := p.ReasoningEffort == ""
			for _, ef := range m.Reasoning.Efforts {
				ok = ok || ef.ID == p.ReasoningEffort
			}
			if !ok {
				return nil, errf("invalid-argument", "model %s/%s has no reasoning effort %q", p.Provider, p.Model, p.ReasoningEffort)
			}
			s.mu.Lock()
			ss.provider, ss.model, ss.effort = p.Provider, p.Model, p.ReasoningEffort
			s.mu.Unlock()
			return struct{}{}, nil
		}
	}
	return nil, errf("invalid-argument", "unknown model %s/%s", p.Provider, p.Model)
}

func (s *Server) sessionRename(_ string, payload json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID string `json:"sessionId"`
		Title     string `json:"title"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	ss, e := s.get(p.SessionID)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	ss.title = p.Title
	ss.appendEvent("session/title", titleData{Title: p.Title, MessageSeqs: []int64{}, Source: source{Kind: "user"}}, nil)
	s.mu.Unlock()
	return struct{}{}, nil
}

func (s *Server) sessionCancel(_ string, payload json.RawMessage) (any, *rpcError) {
	var p sessionArg
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	ss, e := s.get(p.SessionID)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	if ss.cancel != nil {
		close(ss.cancel)
		ss.cancel = nil
	}
	s.mu.Unlock()
	return struct{}{}, nil
}

func (s *Server) sessionAttachment(_ string, payload json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID    string `json:"sessionId"`
		AttachmentID string `json:"attachmentId"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	ss, e := s.get(p.SessionID)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := ss.attachments[p.AttachmentID]
	if !ok {
		return nil, errf("session/attachment-invalid", "attachment %q not found in %s", p.AttachmentID, ss.id)
	}
	res := attachmentValue{Data: a.data}
	res.Attachment.AttachmentID, res.Attachment.MediaType = p.AttachmentID, a.mediaType
	return res, nil
}

func (s *Server) workspaceArchive(_ string, payload json.RawMessage) (any, *rpcError) {
	var p sessionArg
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	if _, e := s.get(p.SessionID); e != nil {
		return nil, e
	}
	s.mu.Lock()
	if !contains(s.archived, p.SessionID) {
		s.archived = append(s.archived, p.SessionID)
	}
	s.mu.Unlock()
	return struct{}{}, nil
}

// waitIdle waits (s.mu held) until no turn runs, at most d.
func (s *Server) waitIdle(ss *session, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for ss.running && time.Now().Before(deadline) {
		s.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		s.mu.Lock()
	}
	return !ss.running
}
