package dshtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

type block = map[string]any

func (s *Server) sessionPrompt(rpcID string, payload json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID string  `json:"sessionId"`
		Mode      string  `json:"mode"`
		Content   []block `json:"content"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	ss, e := s.get(p.SessionID)
	if e != nil {
		return nil, e
	}
	if p.Mode != "queue" && p.Mode != "steer" {
		return nil, errf("invalid-argument", "mode must be queue or steer, not %q", p.Mode)
	}
	if len(p.Content) == 0 {
		return nil, errf("invalid-argument", "content is empty")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var content []block
	for i, b := range p.Content {
		switch b["type"] {
		case "text":
			content = append(content, block{"type": "text", "text": b["text"]})
		case "image":
			mt, _ := b["mediaType"].(string)
			data, _ := b["data"].(string)
			if mt == "" || data == "" {
				return nil, errf("empty-image", "image block %d has no data", i)
			}
			id := fmt.Sprintf("att-%d", len(ss.attachments)+1)
			ss.attachments[id] = attachment{mediaType: mt, data: data}
			content = append(content, block{"type": "image", "attachment": block{"attachmentId": id, "mediaType": mt, "bytes": len(data) * 3 / 4}})
		default:
			return nil, errf("invalid-argument", "content block %d has unknown type %v", i, b["type"])
		}
	}
	source := block{"kind": "user", "rpcId": rpcID}
	msgID := uuid()
	ss.appendEvent("agent/inbox/spliced", block{"target": "next-turn", "start": 0,
		"inserted": []block{{"content": content, "source": source, "role": "user", "id": msgID}}}, nil)
	ss.queue <- func() { s.runTurn(ss, content, source, msgID, nil) }
	return block{"accepted": true}, nil
}

func textOf(content []block) string {
	var b strings.Builder
	for _, c := range content {
		if t, ok := c["text"].(string); ok {
			b.WriteString(t)
		}
	}
	return b.String()
}

// runTurn plays one turn: the user message, then (after TurnDelay, or when
// cancelled) the assistant's scripted reply and turn/end.
func (s *Server) runTurn(ss *session, content []block, source block, msgID string, g *goal) {
	time.Sleep(s.opts.TurnDelay)
	s.mu.Lock()
	ss.running = true
	ss.turn++
	turn := ss.turn
	cancel := make(chan struct{})
	ss.cancel = cancel
	ss.appendEvent("turn/start", block{"turn": turn}, nil)
	if source["kind"] == "user" {
		ss.appendEvent("agent/inbox/spliced", block{"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []block{}}, nil)
	}
	ss.appendEvent("step/start", block{"turn": turn, "step": 1}, nil)
	text := textOf(content)
	seq := ss.appendEvent("user/message", block{"content": content, "source": source, "role": "user", "id": msgID},
		&placement{SurfaceOp: "append"})
	ss.surface = append(ss.surface, seq)
	ss.tokens[seq] = len(text)/4 + 1
	if ss.title == "" {
		ss.title = text
		ss.appendEvent("session/title", block{"title": text, "messageSeqs": []int64{seq}, "source": block{"kind": "fallback"}}, nil)
	}
	ss.appendEvent("request/context", block{"provider": ss.provider, "model": ss.model, "contextWindow": 1000000}, nil)
	s.n++
	n := s.n
	s.mu.Unlock()

	cancelled := false
	if s.opts.HoldTurns {
		<-cancel
		cancelled = true
	} else {
		select {
		case <-cancel:
			cancelled = true
		case <-time.After(s.opts.TurnDelay):
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	reason := "completed"
	if cancelled {
		reason = "cancelled"
	} else {
		reply := fmt.Sprintf("FAKE-REPLY-%d: scripted answer to %q", n, text)
		if s.opts.Reply != nil {
			reply = s.opts.Reply(text)
		}
		first := int64(len(ss.events))
		chunk := func(c block) { ss.appendEvent("assistant/chunk", block{"turn": turn, "step": 1, "chunk": c}, nil) }
		chunk(block{"type": "block-start", "index": 0, "blockType": "text"})
		for i := 0; i < len(reply); i += 20 {
			chunk(block{"type": "text-delta", "index": 0, "text": reply[i:min(i+20, len(reply))]})
		}
		chunk(block{"type": "block-end", "index": 0, "block": block{"type": "text", "text": reply}})
		usage := block{"inputTokens": 1500 + len(text)/4, "outputTokens": len(reply)/4 + 1, "cacheReadTokens": 0}
		chunk(block{"type": "usage", "usage": usage})
		chunk(block{"type": "finish", "reason": block{"kind": "stop"}})
		var srcSeqs []int64
		for q := first; q < int64(len(ss.events)); q++ {
			srcSeqs = append(srcSeqs, q)
		}
		aseq := ss.appendEvent("assistant/message", block{"turn": turn, "step": 1, "usage": usage, "message": block{
			"role": "assistant", "content": []block{{"type": "text", "text": reply}}, "id": uuid(),
			"source": block{"kind": "model", "provider": ss.provider, "model": ss.model}}},
			&placement{SourceEventSeqs: srcSeqs, SurfaceOp: "append"})
		ss.surface = append(ss.surface, aseq)
		ss.tokens[aseq] = len(reply)/4 + 1
	}
	ss.appendEvent("step/end", block{"turn": turn, "step": 1}, nil)
	ss.appendEvent("turn/end", block{"turn": turn, "reason": block{"kind": reason}}, nil)
	ss.running, ss.cancel = false, nil
	if g != nil && ss.goal == g && g.Phase == "active" {
		if g.Rounds >= g.MaxRounds {
			g.Revision++
			g.Phase = "blocked"
			g.UpdatedAt = now()
			ss.appendEvent("goal/change", s.goalChange("block", g, block{"blockedReason": block{"code": "round-limit",
				"message": fmt.Sprintf("Goal reached its configured limit of %d rounds.", g.MaxRounds)}}), nil)
		} else {
			s.queueRound(ss, g)
		}
	}
}

func (s *Server) goalChange(op string, g *goal, extra block) block {
	gb := block{"id": g.ID, "revision": g.Revision, "objective": g.Objective, "phase": g.Phase, "maxGoalRounds": g.MaxRounds}
	for k, v := range extra {
		gb[k] = v
	}
	return block{"kind": "goal/change", "version": 1, "operation": op, "goal": gb, "roundsStarted": g.Rounds,
		"createdAt": g.CreatedAt, "updatedAt": g.UpdatedAt}
}

// queueRound queues the goal's next round (s.mu held).
func (s *Server) queueRound(ss *session, g *goal) {
	ss.queue <- func() {
		s.mu.Lock()
		if ss.goal != g || g.Phase != "active" {
			s.mu.Unlock()
			return
		}
		g.Rounds++
		round, rev := g.Rounds, g.Revision
		s.mu.Unlock()
		text := fmt.Sprintf("<goal_round>\nObjective: %q\nRound: %d/%d\n\nContinue working toward the objective in this same session.\n</goal_round>",
			g.Objective, round, g.MaxRounds)
		s.runTurn(ss, []block{{"type": "text", "text": text}},
			block{"kind": "goal", "goalId": g.ID, "revision": rev, "round": round}, uuid(), g)
	}
}

type goalArgs struct {
	SessionID     string `json:"sessionId"`
	Objective     string `json:"objective"`
	MaxGoalRounds int    `json:"maxGoalRounds"`
	Ref           struct {
		ID       string `json:"id"`
		Revision int64  `json:"revision"`
	} `json:"ref"`
}

func (s *Server) goalCreate(_ string, payload json.RawMessage) (any, *rpcError) {
	var p goalArgs
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	ss, e := s.get(p.SessionID)
	if e != nil {
		return nil, e
	}
	if strings.TrimSpace(p.Objective) == "" {
		return nil, errf("invalid-argument", "objective is required")
	}
	if p.MaxGoalRounds <= 0 {
		p.MaxGoalRounds = 256
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := ss.goal; g != nil {
		return nil, &rpcError{Code: "internal", GoalCode: "GOAL_ALREADY_EXISTS",
			Message: fmt.Sprintf("GoalError: goal %q already exists with phase %q", g.ID, g.Phase)}
	}
	g := &goal{ID: "goal-" + uuid(), Revision: 1, Objective: p.Objective, Phase: "active", MaxRounds: p.MaxGoalRounds,
		CreatedAt: now(), UpdatedAt: now()}
	ss.goal = g
	ss.appendEvent("goal/change", s.goalChange("create", g, nil), nil)
	s.queueRound(ss, g)
	return block{"ref": block{"id": g.ID, "revision": g.Revision}}, nil
}

// checkRef finds the session's goal and refuses a stale revision with DSH's
// own words (s.mu held).
func checkRef(ss *session, p goalArgs) (*goal, *rpcError) {
	g := ss.goal
	if g == nil || g.ID != p.Ref.ID {
		return nil, &rpcError{Code: "internal", GoalCode: "GOAL_NOT_FOUND", Message: fmt.Sprintf("GoalError: goal %q not found", p.Ref.ID)}
	}
	if g.Revision != p.Ref.Revision {
		return nil, &rpcError{Code: "internal", GoalCode: "GOAL_STALE_REVISION",
			Message: fmt.Sprintf("GoalError: stale goal ref %q revision %d; current is %q revision %d", p.Ref.ID, p.Ref.Revision, g.ID, g.Revision)}
	}
	return g, nil
}

func (s *Server) goalPause(_ string, payload json.RawMessage) (any, *rpcError) {
	var p goalArgs
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	ss, e := s.get(p.SessionID)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := ss.goal; g != nil && s.stale < s.opts.StalePauses {
		s.stale++
		g.Revision++
		g.UpdatedAt = now()
		ss.appendEvent("goal/change", s.goalChange("update", g, nil), nil)
	}
	if g := ss.goal; g != nil && g.ID == p.Ref.ID && g.Phase != "active" {
		// rc.8 checks the transition before the revision.
		return nil, &rpcError{Code: "internal", GoalCode: "GOAL_INVALID_TRANSITION",
			Message: fmt.Sprintf("GoalError: cannot pause goal %q from phase %q; expected active", g.ID, g.Phase)}
	}
	g, e := checkRef(ss, p)
	if e != nil {
		return nil, e
	}
	g.Revision++
	g.Phase = "paused"
	g.UpdatedAt = now()
	ss.appendEvent("goal/change", s.goalChange("pause", g, nil), nil)
	return block{"ref": block{"id": g.ID, "revision": g.Revision}}, nil
}

func (s *Server) goalClear(_ string, payload json.RawMessage) (any, *rpcError) {
	var p goalArgs
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	ss, e := s.get(p.SessionID)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, e := checkRef(ss, p)
	if e != nil {
		return nil, e
	}
	ss.goal = nil
	ss.appendEvent("goal/change", block{"kind": "goal/change", "version": 1, "operation": "clear",
		"cleared": block{"id": g.ID, "revision": g.Revision + 1}, "clearedAt": now()}, nil)
	return block{"cleared": true}, nil
}

func (s *Server) commandsExecute(_ string, payload json.RawMessage) (any, *rpcError) {
	var p struct {
		Args struct {
			AgentID string `json:"agentId"`
			Line    string `json:"line"`
		} `json:"args"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	ss, e := s.get(p.Args.AgentID)
	if e != nil {
		return nil, e
	}
	name, args, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(p.Args.Line), "/"), " ")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	cmdID := fmt.Sprintf("cmd-%s-%d", uuid()[:8], s.n)
	if name != "compact" {
		return block{"commandId": cmdID, "result": block{"kind": "error", "text": "Unknown command: /" + name}}, nil
	}
	s.waitIdle(ss, 10*time.Second)
	ss.appendEvent("command/run", block{"commandId": cmdID, "name": "compact", "args": args, "source": block{"kind": "user"}}, nil)
	if len(ss.surface) == 0 {
		ss.appendEvent("command/done", block{"commandId": cmdID, "kind": "error", "text": "Nothing to compact."}, nil)
		return block{"commandId": cmdID, "result": block{"kind": "error", "text": "Nothing to compact."}}, nil
	}
	shadow := ss.surface
	if len(shadow) > 1 {
		shadow = shadow[:len(shadow)-1]
	}
	shadow = append([]int64(nil), shadow...)
	retained := append([]int64(nil), ss.surface[len(shadow):]...)
	tokens := 0
	for _, q := range shadow {
		tokens += ss.tokens[q]
	}
	cid := uuid()
	if f := s.opts.CompactFails; f != "" {
		return s.compactFailure(ss, f, cmdID, cid)
	}
	summary := fmt.Sprintf("SUMMARY-%d: the conversation so far, condensed by the fake DSH server.", s.n)
	start := ss.appendEvent("compaction/start", block{"compactionId": cid, "sourceCommandId": cmdID, "turn": nil}, nil)
	sum := ss.appendEvent("compaction/summary", block{"compactionId": cid, "sourceCommandId": cmdID,
		"summary": []block{{"type": "text", "text": summary}}, "rawOutput": []block{{"type": "text", "text": summary}},
		"llmStreamCall": true, "shadowedRange": block{"start": shadow[0], "end": shadow[len(shadow)-1]},
		"shadowedSeqs": shadow, "shadowedTokenCount": tokens, "provider": ss.provider, "model": ss.model, "maxTokens": 8192}, nil)
	rep := ss.appendEvent("user/message", block{"content": []block{
		{"type": "text", "text": "This is an automatically generated checkpoint condensing an earlier span of the conversation to free up context.\n\n<compacted-summary>"},
		{"type": "text", "text": summary}, {"type": "text", "text": "</compacted-summary>"}},
		"source": block{"kind": "plugin", "plugin": "compact", "compactionId": cid, "sourceCommandId": cmdID},
		"role":   "user", "id": uuid()},
		&placement{SourceEventSeqs: append([]int64{start, sum}, shadow...),
			SurfaceOp: block{"op": "replace", "start": shadow[0], "end": shadow[len(shadow)-1]}})
	ss.surface = append([]int64{rep}, retained...)
	for _, q := range shadow {
		delete(ss.tokens, q)
	}
	ss.tokens[rep] = len(summary)/4 + 1
	ss.appendEvent("compaction/end", block{"compactionId": cid, "sourceCommandId": cmdID, "turn": nil}, nil)
	text := fmt.Sprintf("Compacted %d history items (~%d tokens).", len(shadow), tokens)
	ss.appendEvent("command/done", block{"commandId": cmdID, "kind": "success", "text": text, "sourceEventSeq": sum}, nil)
	return block{"commandId": cmdID, "result": block{"kind": "success", "text": text, "sourceEventSeq": sum}}, nil
}

// compactFailureText is DSH 0.1.0-rc.8's /compact text per manual
// compaction failure code (@deepseek-ai/dsh-command-compact).
var compactFailureText = map[string]string{
	"busy":        "Compaction is unavailable because this process has an active compaction, or the agent is not idle.",
	"changed":     "The history selected for compaction changed before it could be replaced. The conversation is unchanged; the attempt is recorded in the session log.",
	"summary":     "Compaction could not produce a useful summary. The conversation is unchanged; the attempt is recorded in the session log.",
	"commit":      "Compaction did not finish cleanly; some session history may have changed. Inspect the current session state before retrying.",
	"persistence": "Compaction finished, but the session could not be saved.",
}

// compactFailure writes what DSH writes for a failed manual compaction:
// busy writes nothing; changed, summary and commit close the bracket with
// an error; persistence closes it successfully, then its flush fails.
// Called with s.mu held.
func (s *Server) compactFailure(ss *session, code, cmdID, cid string) (any, *rpcError) {
	text, ok := compactFailureText[code]
	if !ok {
		return nil, errf("INTERNAL", "dshtest: no such compaction failure %q", code)
	}
	lifecycle := block{"compactionId": cid, "sourceCommandId": cmdID, "turn": nil}
	if code != "busy" {
		ss.appendEvent("compaction/start", lifecycle, nil)
		if code == "persistence" {
			shadow := append([]int64(nil), ss.surface[:1]...)
			ss.appendEvent("compaction/summary", block{"compactionId": cid, "sourceCommandId": cmdID,
				"summary":       []block{{"type": "text", "text": "SUMMARY: flushed in memory only."}},
				"shadowedRange": block{"start": shadow[0], "end": shadow[0]}, "shadowedSeqs": shadow, "shadowedTokenCount": 1}, nil)
			ss.appendEvent("compaction/end", lifecycle, nil)
		} else {
			ss.appendEvent("compaction/end", block{"compactionId": cid, "sourceCommandId": cmdID, "turn": nil,
				"error": "ManualCompactionError: " + code}, nil)
		}
	}
	ss.appendEvent("command/done", block{"commandId": cmdID, "kind": "error", "text": text}, nil)
	return block{"commandId": cmdID, "result": block{"kind": "error", "text": text}}, nil
}
