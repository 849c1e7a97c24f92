package dsh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
)

const compactNote = "DSH's /compact command takes no argument (commands/list gives it no input); compacted without the focus"

// Compact runs DSH's /compact through the commands remote
// (commands/execute {agentId, line:"/compact"}); the compaction bracket it
// writes reaches the sink as one context.compacted entry.
func (l *live) Compact(ctx context.Context, focus string) (core.CompactResult, error) {
	if err := l.ensureOpen("compact"); err != nil {
		return core.CompactResult{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.catchUp(ctx); err != nil {
		return core.CompactResult{}, err
	}
	if err := l.hasCompact(ctx); err != nil {
		return core.CompactResult{}, err
	}
	var res struct {
		CommandID string `json:"commandId"`
		Result    struct {
			Kind           string `json:"kind"`
			Code           string `json:"code"`
			Text           string `json:"text"`
			SourceEventSeq *int64 `json:"sourceEventSeq"`
		} `json:"result"`
	}
	args := executeArgs{AgentID: l.id, Line: "/compact", Images: []json.RawMessage{}}
	if err := l.h.rpc.call(ctx, "commands/execute", remoteArgs[executeArgs]{Args: args}, &res); err != nil {
		return core.CompactResult{}, err
	}
	if res.Result.Kind != "success" {
		// DSH records a failed attempt in its log: record it too (if this
		// read fails, the next catch-up records it).
		_, _ = l.catchUp(ctx)
		return core.CompactResult{}, compactError(res.Result.Code, res.Result.Text, res.Result.Kind)
	}
	refused := len(l.m.refused)
	for {
		evs, _, err := l.h.readSince(ctx, l.id, l.m.last)
		if err != nil {
			return core.CompactResult{}, err
		}
		finished := false
		for _, ev := range evs {
			if !l.m.feed(ev) {
				continue
			}
			if ev.Type == "command/done" || ev.Type == "compaction/end" {
				var d struct {
					CommandID       string `json:"commandId"`
					SourceCommandID string `json:"sourceCommandId"`
				}
				_ = json.Unmarshal(ev.Data, &d)
				if res.CommandID == "" || d.CommandID == res.CommandID || d.SourceCommandID == res.CommandID {
					finished = finished || ev.Type == "command/done" || res.CommandID == ""
				}
			}
		}
		for _, r := range l.m.refused[refused:] {
			if res.CommandID == "" || r.SourceCommandID == res.CommandID {
				return core.CompactResult{}, core.Errorf(core.CodeHarness, "dsh /compact: the compaction record breaks DSH's compaction contract: %s", r.Message)
			}
		}
		if finished {
			break
		}
		select {
		case <-ctx.Done():
			return core.CompactResult{}, core.E(core.CodeCancelled, "dsh /compact: stopped waiting for the compaction record", errors.Join(core.ErrCancelled, ctx.Err()))
		case <-time.After(l.h.cfg.PollInterval):
		}
	}
	out := core.CompactResult{}
	if strings.TrimSpace(focus) != "" {
		out.FocusNote = compactNote
	}
	return out, nil
}

// compactFailures maps the closed set of DSH's manual compaction failures
// (ManualCompactionError codes) to Bridge's error codes, one each. rc.8's
// /compact reports only its fixed text for the code, so the text is matched
// when no code is given.
var compactFailures = []struct {
	code core.Code
	dsh  string
	text string
}{
	{core.CodeBusy, "busy", "active compaction, or the agent is not idle"},
	{core.CodeChanged, "changed", "changed before it could be replaced"},
	{core.CodeSummary, "summary", "could not produce a useful summary"},
	{core.CodeCommit, "commit", "did not finish cleanly"},
	{core.CodePersistence, "persistence", "could not be saved"},
	{core.CodeCancelled, "cancelled", "compaction cancelled"},
}

// compactError is the Bridge error for a /compact that did not succeed.
func compactError(code, text, kind string) error {
	for _, f := range compactFailures {
		if code == f.dsh || (code == "" && strings.Contains(strings.ToLower(text), strings.ToLower(f.text))) {
			msg := fmt.Sprintf("dsh /compact failed (%s): %s", f.dsh, text)
			if f.code == core.CodeCancelled {
				return core.E(f.code, msg, core.ErrCancelled)
			}
			return core.Errorf(f.code, "%s", msg)
		}
	}
	return core.Errorf(core.CodeHarness, "dsh /compact: %s: %s", firstNonEmpty(kind, "no result"), text)
}

// hasCompact checks that the session's commands/list lists compact.
func (l *live) hasCompact(ctx context.Context) error {
	var cmds []struct {
		Name string `json:"name"`
	}
	if err := l.h.rpc.call(ctx, "commands/list", remoteArgs[agentArgs]{Args: agentArgs{AgentID: l.id}}, &cmds); err != nil {
		return err
	}
	for _, c := range cmds {
		if c.Name == "compact" {
			return nil
		}
	}
	return core.E(core.CodeUnsupported, "dsh /compact: this session's commands/list does not list compact", core.ErrUnsupported)
}
