package dsh

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// refuse keeps an event that breaks DSH's compaction contract as a harness
// event carrying the contract's error, and notes the refusal. replaced are
// the entries the refused bracket's checkpoint message replaced, if any.
func (m *mapper) refuse(ev Event, id string, command *string, msg string, replaced []string) {
	r := Refusal{CompactionID: id, Message: msg}
	if command != nil {
		r.SourceCommandID = *command
	}
	m.refused = append(m.refused, r)
	p := harnessEvent{Type: ev.Type, Seq: ev.First(), Data: ev.Data, Refused: msg, Replaces: replaced}
	m.emit(core.NewEntry{Kind: core.KindHarnessEvent, Payload: core.Payload(p), NativeID: m.nativeID(ev.First())})
}

// checkIDs holds an event's compactionId and sourceCommandId to the
// contract: a non-empty id, and the command id of the open bracket's start.
func (m *mapper) checkIDs(ev Event, d bracketData) string {
	if d.CompactionID == "" {
		return ev.Type + " compactionId must be a non-empty string"
	}
	if d.SourceCommandID != nil && *d.SourceCommandID == "" {
		return ev.Type + " sourceCommandId must be a non-empty string"
	}
	if ev.Type == "compaction/start" {
		return ""
	}
	if m.open == nil {
		return ev.Type + " has no matching compaction/start"
	}
	if d.CompactionID != m.open.id {
		return fmt.Sprintf("%s id %s does not match compaction/start id %s", ev.Type, d.CompactionID, m.open.id)
	}
	if got, want := deref(d.SourceCommandID), deref(m.open.command); got != want {
		return fmt.Sprintf("%s sourceCommandId %s does not match compaction/start sourceCommandId %s", ev.Type, got, want)
	}
	return ""
}

// checkOwner holds a bracket's owner to the contract: a numbered bracket
// inside its exact turn, a standalone one between turns.
func (m *mapper) checkOwner(typ string, turn *int64) string {
	switch {
	case turn == nil && m.inTurn:
		return fmt.Sprintf("%s is standalone but turn %d is open", typ, m.turnNo)
	case turn != nil && !m.inTurn:
		return fmt.Sprintf("%s for turn %d appended outside any open turn", typ, *turn)
	case turn != nil && *turn != m.turnNo:
		return fmt.Sprintf("%s names turn %d but open turn is %d", typ, *turn, m.turnNo)
	}
	return ""
}

func (m *mapper) compactionStart(ev Event) {
	var d bracketData
	_ = json.Unmarshal(ev.Data, &d)
	msg := m.checkIDs(ev, d)
	if msg == "" && m.open != nil {
		msg = fmt.Sprintf("compaction/start while %s is still compacting", m.open.owner())
	}
	if msg == "" {
		msg = m.checkOwner(ev.Type, d.Turn)
	}
	if msg != "" {
		m.refuse(ev, d.CompactionID, d.SourceCommandID, msg, nil)
		return
	}
	b := &bracket{id: d.CompactionID, turn: d.Turn, command: d.SourceCommandID, start: ev.Data, pre: m.pressure}
	if d.Turn != nil {
		// Automatic: DSH compacts for pressure before a step starts, and for
		// a context overflow inside the step whose request was refused.
		switch {
		case m.inStep && m.overflow:
			b.cause = core.CauseContextOverflow
		case !m.inStep:
			b.cause = core.CausePressure
		}
	}
	m.open = b
}

func (m *mapper) compactionBody(ev Event) {
	var d bracketData
	_ = json.Unmarshal(ev.Data, &d)
	msg := m.checkIDs(ev, d)
	if msg == "" && ev.Type == "compaction/summary" {
		msg = m.checkSummary(d)
	}
	if msg != "" {
		m.refuse(ev, d.CompactionID, d.SourceCommandID, msg, nil)
		return
	}
	if ev.Type == "compaction/summary" {
		m.open.summary = ev.Data
		m.open.text = joinText(d.Summary, "text")
		var n int64
		if json.Unmarshal(d.ShadowedTokenCount, &n) == nil {
			m.open.tokens = &n
		}
	} else {
		m.open.prune = ev.Data
	}
}

// checkSummary holds a compaction/summary to the contract: one per
// compaction, in its owner's turn, naming a non-empty shadowed span whose
// range is its first and last seq, with a non-negative integer token count.
func (m *mapper) checkSummary(d bracketData) string {
	if msg := m.checkOwner("compaction/summary", m.open.turn); msg != "" {
		return msg
	}
	if m.open.summary != nil {
		return "compaction/summary repeated within one compaction"
	}
	seqs := d.ShadowedSeqs
	if len(seqs) == 0 {
		return "compaction/summary shadowedSeqs must be non-empty"
	}
	if r := d.ShadowedRange; r == nil || r.Start != seqs[0] || r.End != seqs[len(seqs)-1] {
		return "compaction/summary shadowedRange must match the first and last shadowedSeqs"
	}
	var n int64
	if err := json.Unmarshal(d.ShadowedTokenCount, &n); err != nil || n < 0 || n > 1<<53-1 {
		return "compaction/summary shadowedTokenCount must be a non-negative safe integer"
	}
	return ""
}

func (m *mapper) compactionEnd(ev Event) {
	var d bracketData
	_ = json.Unmarshal(ev.Data, &d)
	msg := m.checkIDs(ev, d)
	b := m.open
	if msg == "" && deref64(d.Turn) != deref64(b.turn) {
		msg = fmt.Sprintf("compaction/end owner %s does not match compaction/start owner %s", ownerText(d.Turn), ownerText(b.turn))
	}
	if msg == "" {
		msg = m.checkOwner(ev.Type, b.turn)
	}
	failed := false
	if e := strings.TrimSpace(string(d.Error)); e != "" && e != "null" {
		failed = true
	} else if msg == "" && b.summary == nil && b.prune == nil {
		msg = "successful compaction/end requires one compaction/summary"
	}
	if msg != "" {
		if b != nil && d.CompactionID == b.id {
			m.open = nil
			m.refuse(ev, b.id, b.command, msg, b.replaces)
		} else {
			m.refuse(ev, d.CompactionID, d.SourceCommandID, msg, nil)
		}
		return
	}
	m.open = nil
	if failed {
		// A failed compaction freed nothing: keep it as data.
		m.harnessEvent(ev, b.replaces)
		return
	}
	raw := compactionRaw{Start: b.start, End: ev.Data, Summary: b.summary, Prune: b.prune, Replacement: b.replacement,
		Replaces: b.replaces}
	trigger := core.TriggerManual
	if b.turn != nil {
		trigger = core.TriggerAuto
	}
	c := core.Compacted{Harness: harnessName, Trigger: trigger, Cause: b.cause, PreTokens: b.pre, ShadowedTokens: b.tokens,
		Summary: b.text, NativeID: m.prefix() + "#compaction:" + b.id, Raw: core.Payload(raw)}
	m.emit(c.Entry())
}
