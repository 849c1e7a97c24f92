package dshtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

func (s *Server) sessionPrompt(rpcID string, payload json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID string `json:"sessionId"`
		Mode      string `json:"mode"`
		Content   []struct {
			Type      string `json:"type"`
			Text      string `json:"text"`
			MediaType string `json:"mediaType"`
			Data      string `json:"data"`
		} `json:"content"`
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
	var content []contentBlock
	for i, b := range p.Content {
		switch b.Type {
		case "text":
			content = append(content, textBlock(b.Text))
		case "image":
			if b.MediaType == "" || b.Data == "" {
				return nil, errf("empty-image", "image block %d has no data", i)
			}
			id := fmt.Sprintf("att-%d", len(ss.attachments)+1)
			ss.attachments[id] = attachment{mediaType: b.MediaType, data: b.Data}
			content = append(content, contentBlock{Type: "image",
				Attachment: &attachmentRef{AttachmentID: id, MediaType: b.MediaType, Bytes: len(b.Data) * 3 / 4}})
		default:
			return nil, errf("invalid-argument", "content block %d has unknown type %v", i, b.Type)
		}
	}
	msg := message{Content: content, Source: userSource{Kind: "user", RPCID: rpcID}, Role: "user", ID: uuid()}
	ss.appendEvent("agent/inbox/spliced", inboxSpliced{Target: "next-turn", Start: 0, Inserted: []message{msg}}, nil)
	ss.queue <- func() { s.runTurn(ss, msg, nil) }
	return struct {
		Accepted bool `json:"accepted"`
	}{true}, nil
}

func textOf(content []contentBlock) string {
	var b strings.Builder
	for _, c := range content {
		if c.Text != nil {
			b.WriteString(*c.Text)
		}
	}
	return b.String()
}

// runTurn plays one turn: the user message (a prompt, or goal g's round),
// then (after TurnDelay, or when cancelled) the assistant's scripted reply
// and turn/end.
func (s *Server) runTurn(ss *session, msg message, g *goal) {
	time.Sleep(s.opts.TurnDelay)
	s.mu.Lock()
	ss.running = true
	ss.turn++
	turn := ss.turn
	cancel := make(chan struct{})
	ss.cancel = cancel
	ss.appendEvent("turn/start", turnData{Turn: turn}, nil)
	if g == nil {
		ss.appendEvent("agent/inbox/spliced", inboxSpliced{Target: "next-turn", Start: 0, RemovedCount: 1, Inserted: []message{}}, nil)
	}
	ss.appendEvent("step/start", stepData{Turn: turn, Step: 1}, nil)
	text := textOf(msg.Content)
	seq := ss.appendEvent("user/message", msg, &placement{SurfaceOp: "append"})
	ss.surface = append(ss.surface, seq)
	ss.tokens[seq] = len(text)/4 + 1
	if ss.title == "" {
		ss.title = text
		ss.appendEvent("session/title", titleData{Title: text, MessageSeqs: []int64{seq}, Source: source{Kind: "fallback"}}, nil)
	}
	ss.appendEvent("request/context", requestContext{Provider: ss.provider, Model: ss.model, ContextWindow: 1000000}, nil)
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
	why := "completed"
	if cancelled {
		why = "cancelled"
	} else {
		reply := fmt.Sprintf("FAKE-REPLY-%d: scripted answer to %q", n, text)
		if s.opts.Reply != nil {
			reply = s.opts.Reply(text)
		}
		first := int64(len(ss.events))
		chunk := func(c any) { ss.appendEvent("assistant/chunk", chunkData{Turn: turn, Step: 1, Chunk: c}, nil) }
		chunk(blockStart{Type: "block-start", Index: 0, BlockType: "text"})
		for i := 0; i < len(reply); i += 20 {
			chunk(textDelta{Type: "text-delta", Index: 0, Text: reply[i:min(i+20, len(reply))]})
		}
		chunk(blockEnd{Type: "block-end", Index: 0, Block: textBlock(reply)})
		used := usage{InputTokens: 1500 + len(text)/4, OutputTokens: len(reply)/4 + 1, CacheReadTokens: 0}
		chunk(usageChunk{Type: "usage", Usage: used})
		chunk(finishChunk{Type: "finish", Reason: reason{Kind: "stop"}})
		var srcSeqs []int64
		for q := first; q < int64(len(ss.events)); q++ {
			srcSeqs = append(srcSeqs, q)
		}
		aseq := ss.appendEvent("assistant/message", assistantData{Turn: turn, Step: 1, Usage: used, Message: message{
			Role: "assistant", Content: []contentBlock{textBlock(reply)}, ID: uuid(),
			Source: modelSource{Kind: "model", Provider: ss.provider, Model: ss.model}}},
			&placement{SourceEventSeqs: srcSeqs, SurfaceOp: "append"})
		ss.surface = append(ss.surface, aseq)
		ss.tokens[aseq] = len(reply)/4 + 1
	}
	ss.appendEvent("step/end", stepData{Turn: turn, Step: 1}, nil)
	ss.appendEvent("turn/end", turnEnd{Turn: turn, Reason: reason{Kind: why}}, nil)
	ss.running, ss.cancel = false, nil
	if g != nil && ss.goal == g && g.Phase == "active" {
		if g.Rounds >= g.MaxRounds {
			g.Revision++
			g.Phase = "blocked"
			g.UpdatedAt = now()
			ss.appendEvent("goal/change", s.goalChange("block", g, &blockedReason{Code: "round-limit",
				Message: fmt.Sprintf("Goal reached its configured limit of %d rounds.", g.MaxRounds)}), nil)
		} else {
			s.queueRound(ss, g)
		}
	}
}

func (s *Server) goalChange(op string, g *goal, blocked *blockedReason) goalChange {
	gd := goalData{ID: g.ID, Revision: g.Revision, Objective: g.Objective, Phase: g.Phase, MaxGoalRounds: g.MaxRounds,
		BlockedReason: blocked}
	return goalChange{Kind: "goal/change", Version: 1, Operation: op, Goal: gd, RoundsStarted: g.Rounds,
		CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt}
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
		s.runTurn(ss, message{Content: []contentBlock{textBlock(text)}, Role: "user", ID: uuid(),
			Source: goalSource{Kind: "goal", GoalID: g.ID, Revision: rev, Round: round}}, g)
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
	return refValue{Ref: goalRef{ID: g.ID, Revision: g.Revision}}, nil
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
	return refValue{Ref: goalRef{ID: g.ID, Revision: g.Revision}}, nil
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
	ss.appendEvent("goal/change", goalCleared{Kind: "goal/change", Version: 1, Operation: "clear",
		Cleared: goalRef{ID: g.ID, Revision: g.Revision + 1}, ClearedAt: now()}, nil)
	return struct {
		Cleared bool `json:"cleared"`
	}{true}, nil
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
		return executeValue{CommandID: cmdID, Result: commandResult{Kind: "error", Text: "Unknown command: /" + name}}, nil
	}
	s.waitIdle(ss, 10*time.Second)
	ss.appendEvent("command/run", commandRun{CommandID: cmdID, Name: "compact", Args: args, Source: source{Kind: "user"}}, nil)
	if len(ss.surface) == 0 {
		return s.commandDone(ss, cmdID, commandResult{Kind: "error", Text: "Nothing to compact."}), nil
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
	lifecycle := compactionLifecycle{CompactionID: cid, SourceCommandID: cmdID, Turn: noTurn}
	start := ss.appendEvent("compaction/start", lifecycle, nil)
	span := seqRange{Start: shadow[0], End: shadow[len(shadow)-1]}
	sum := ss.appendEvent("compaction/summary", compactionSummary{CompactionID: cid, SourceCommandID: cmdID,
		Summary: []contentBlock{textBlock(summary)}, RawOutput: []contentBlock{textBlock(summary)},
		LLMStreamCall: true, ShadowedRange: span, ShadowedSeqs: shadow, ShadowedTokenCount: tokens,
		Provider: ss.provider, Model: ss.model, MaxTokens: 8192}, nil)
	rep := ss.appendEvent("user/message", message{Content: []contentBlock{
		textBlock("This is an automatically generated checkpoint condensing an earlier span of the conversation to free up context.\n\n<compacted-summary>"),
		textBlock(summary), textBlock("</compacted-summary>")},
		Source: pluginSource{Kind: "plugin", Plugin: "compact", CompactionID: cid, SourceCommandID: cmdID},
		Role:   "user", ID: uuid()},
		&placement{SourceEventSeqs: append([]int64{start, sum}, shadow...),
			SurfaceOp: replaceOp{Op: "replace", Start: span.Start, End: span.End}})
	ss.surface = append([]int64{rep}, retained...)
	for _, q := range shadow {
		delete(ss.tokens, q)
	}
	ss.tokens[rep] = len(summary)/4 + 1
	ss.appendEvent("compaction/end", lifecycle, nil)
	text := fmt.Sprintf("Compacted %d history items (~%d tokens).", len(shadow), tokens)
	return s.commandDone(ss, cmdID, commandResult{Kind: "success", Text: text, SourceEventSeq: &sum}), nil
}

// commandDone writes command/done with the command's result and returns
// commands/execute's value (s.mu held).
func (s *Server) commandDone(ss *session, cmdID string, res commandResult) executeValue {
	done := res
	done.CommandID = cmdID
	ss.appendEvent("command/done", done, nil)
	return executeValue{CommandID: cmdID, Result: res}
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
	lifecycle := compactionLifecycle{CompactionID: cid, SourceCommandID: cmdID, Turn: noTurn}
	if code != "busy" {
		ss.appendEvent("compaction/start", lifecycle, nil)
		if code == "persistence" {
			shadow := append([]int64(nil), ss.surface[:1]...)
			ss.appendEvent("compaction/summary", compactionSummary{CompactionID: cid, SourceCommandID: cmdID,
				Summary:       []contentBlock{textBlock("SUMMARY: flushed in memory only.")},
				ShadowedRange: seqRange{Start: shadow[0], End: shadow[0]}, ShadowedSeqs: shadow, ShadowedTokenCount: 1}, nil)
			ss.appendEvent("compaction/end", lifecycle, nil)
		} else {
			failed := lifecycle
			failed.Error = "ManualCompactionError: " + code
			ss.appendEvent("compaction/end", failed, nil)
		}
	}
	return s.commandDone(ss, cmdID, commandResult{Kind: "error", Text: text}), nil
}
