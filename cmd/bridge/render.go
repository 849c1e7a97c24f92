package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// describe renders an entry's payload for `bridge history`: messages as
// their text, tool calls by name with their input or output, approvals,
// model or effort switches, checkpoints, compactions and plans in words,
// any other kind as its brief JSON.
// Text from a harness or a model is shown as data: control characters are
// replaced and long values cut.
func describe(kind string, payload []byte) string {
	var p map[string]any
	if json.Unmarshal(payload, &p) != nil {
		return brief(payload)
	}
	str := func(k string) string { s, _ := p[k].(string); return clean(s) }
	switch kind {
	case "approval.requested":
		var opts []string
		if list, ok := p["options"].([]any); ok {
			for _, o := range list {
				if m, ok := o.(map[string]any); ok {
					k, _ := m["kind"].(string)
					opts = append(opts, clean(k))
				}
			}
		}
		s := fmt.Sprintf("asks to run %s", orDash(str("title")))
		if k := str("kind"); k != "" {
			s += " [" + k + "]"
		}
		if len(opts) > 0 {
			s += "; options " + strings.Join(opts, ", ")
		}
		return s + " (approval " + str("approvalId") + ")"
	case "approval.resolved":
		verdict := "rejected"
		if p["allowed"] == true {
			verdict = "allowed"
		}
		s := fmt.Sprintf("%s (%s) by %s", verdict, orDash(str("optionKind")), orDash(str("by")))
		if p["remembered"] == true {
			s += ", an earlier \"always\""
		}
		if r := str("reason"); r != "" {
			s += ": " + r
		}
		return s + " (approval " + str("approvalId") + ")"
	case "user.message", "assistant.message":
		if t := str("text"); t != "" {
			return t
		}
	case "tool.started":
		in := p["input"]
		if in == nil {
			in = p["arguments"]
		}
		return strings.TrimSpace(orDash(str("name")) + " " + text(in))
	case "tool.completed":
		state := "done"
		switch {
		case p["abandoned"] == true:
			state = "abandoned"
		case p["isError"] == true:
			state = "failed"
		}
		return strings.TrimSpace(fmt.Sprintf("%s %s: %s", orDash(str("name")), state, text(p["output"])))
	case "checkpoint":
		return fmt.Sprintf("checkpoint (%s): %s", orDash(str("reason")), orDash(str("summary")))
	case "context.compacted":
		return fmt.Sprintf("the harness compacted its context (%s)", orDash(str("trigger")))
	case "session.status":
		return "status " + orDash(str("status"))
	case "artifact.created":
		return "wrote " + orDash(str("path"))
	case "plan.updated":
		if steps, ok := p["steps"].([]any); ok {
			var parts []string
			for _, st := range steps {
				if m, ok := st.(map[string]any); ok {
					t, _ := m["text"].(string)
					status, _ := m["status"].(string)
					parts = append(parts, status+": "+t)
				}
			}
			return clean("plan: " + strings.Join(parts, "; "))
		}
	case "harness.event":
		return "harness event " + orDash(str("type"))
	case "model.changed", "effort.changed":
		what := "model"
		if kind == "effort.changed" {
			what = "effort"
		}
		s := fmt.Sprintf("%s %s -> %s", what, orDash(str("from")), orDash(str(what)))
		if p["downgrade"] == true {
			s += " (downgrade)"
		}
		return s
	}
	return brief(payload)
}

// text is a payload value as one line of text: a string as it is,
// anything else as its JSON.
func text(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return clean(s)
	}
	b, _ := json.Marshal(v)
	return clean(string(b))
}

// clean makes s safe to print on one terminal line.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 120 {
		return string(r[:119]) + "…"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
