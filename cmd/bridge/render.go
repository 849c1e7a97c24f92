package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// describe renders an entry's payload for `bridge history`: approvals and
// model or effort switches in words, any other kind as its brief JSON.
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
