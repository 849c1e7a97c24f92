package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// Errors of ParseReply; they are wrapped in a *core.Error with CodeSummary,
// so compare with errors.Is. Each one is a reason to send RepairPrompt.
var (
	// ErrNoObject: the reply holds no JSON object at all.
	ErrNoObject = errors.New("checkpoint: the reply holds no JSON object")
	// ErrUnbalanced: a JSON object was opened and never closed (a cut-off
	// reply).
	ErrUnbalanced = errors.New("checkpoint: the reply's JSON object is not closed")
	// ErrBadJSON: a balanced object was found but it is not valid JSON, or
	// a member has the wrong type.
	ErrBadJSON = errors.New("checkpoint: the reply's JSON object is malformed")
	// ErrEmptySummary: the object's summary is missing or blank.
	ErrEmptySummary = errors.New("checkpoint: the summary is empty")
)

// Draft is the meaning the model writes; the only thing it is asked for.
type Draft struct {
	Summary      string   `json:"summary"`
	Decisions    []string `json:"decisions"`
	FilesTouched []string `json:"filesTouched"`
	OpenWork     []string `json:"openWork"`
}

// Normalize trims the summary and every item, drops empty items and
// de-duplicates each list keeping the first occurrence.
func (d Draft) Normalize() Draft {
	return Draft{
		Summary:      strings.TrimSpace(d.Summary),
		Decisions:    Dedupe(d.Decisions),
		FilesTouched: Dedupe(d.FilesTouched),
		OpenWork:     Dedupe(d.OpenWork),
	}
}

// wireDraft accepts each list as an array of strings, a single string or
// null; anything else is a type error naming the member.
type wireDraft struct {
	Summary      *json.RawMessage `json:"summary"`
	Decisions    json.RawMessage  `json:"decisions"`
	FilesTouched json.RawMessage  `json:"filesTouched"`
	OpenWork     json.RawMessage  `json:"openWork"`
}

// ParseReply reads the model's reply: the first balanced JSON object in text
// (see FirstObject), decoded as a Draft (unknown members ignored) and
// normalised. An object without a summary found after an unclosed '{' is
// reported as ErrUnbalanced (a reply cut off inside its own object). Errors are *core.Error with CodeSummary wrapping ErrNoObject,
// ErrUnbalanced, ErrBadJSON or ErrEmptySummary.
func ParseReply(text string) (Draft, error) {
	obj, cutOff, err := firstObject(text)
	if err != nil {
		return Draft{}, err
	}
	var w wireDraft
	if err := json.Unmarshal(obj, &w); err != nil {
		return Draft{}, core.E(core.CodeSummary, "checkpoint reply: the JSON object does not decode", errors.Join(ErrBadJSON, err))
	}
	var d Draft
	if w.Summary != nil {
		if err := json.Unmarshal(*w.Summary, &d.Summary); err != nil && string(*w.Summary) != "null" {
			return Draft{}, core.E(core.CodeSummary, "checkpoint reply: summary must be a string", ErrBadJSON)
		}
	}
	lists := []struct {
		name string
		raw  json.RawMessage
		dst  *[]string
	}{{"decisions", w.Decisions, &d.Decisions}, {"filesTouched", w.FilesTouched, &d.FilesTouched}, {"openWork", w.OpenWork, &d.OpenWork}}
	for _, l := range lists {
		v, err := stringList(l.raw)
		if err != nil {
			return Draft{}, core.E(core.CodeSummary, fmt.Sprintf("checkpoint reply: %s must be an array of strings", l.name), ErrBadJSON)
		}
		*l.dst = v
	}
	d = d.Normalize()
	if d.Summary == "" && cutOff {
		// The object found sits inside one that was never closed: the
		// reply was cut off, which is the better thing to repair.
		return Draft{}, errUnbalanced()
	}
	if d.Summary == "" {
		return Draft{}, core.E(core.CodeSummary, "checkpoint reply: summary is empty", ErrEmptySummary)
	}
	return d, nil
}

func stringList(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	var out []string
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// FirstObject returns the first balanced JSON object in text. It looks for
// a '{', then counts braces while respecting strings and escapes, so braces
// inside strings and escaped quotes do not confuse it; a fenced code block
// or a sentence of preamble around the object is ignored, and when two
// objects follow each other the first wins. A candidate that never closes
// is passed over for the next '{'; one that closes but is not valid JSON
// (prose such as "{like this}") is passed over whole, for the next '{'
// after it. At most maxCandidates positions are tried.
//
// Errors (*core.Error, CodeSummary), when no candidate is a valid object:
// ErrUnbalanced when an object was still open at the end of the text,
// ErrBadJSON when balanced candidates were found but none is valid JSON,
// ErrNoObject when the text has no '{' at all.
func FirstObject(text string) (json.RawMessage, error) {
	obj, _, err := firstObject(text)
	return obj, err
}

// firstObject is FirstObject, also reporting whether an unclosed candidate
// came before the object found (a reply cut off inside its own object).
func firstObject(text string) (json.RawMessage, bool, error) {
	var firstBad error
	unbalanced := false
	from := 0
	for tries := 0; tries < maxCandidates && from < len(text); tries++ {
		i := strings.IndexByte(text[from:], '{')
		if i < 0 {
			break
		}
		start := from + i
		end, ok := balancedEnd(text, start)
		if !ok {
			unbalanced = true
			from = start + 1
			continue
		}
		cand := text[start:end]
		if json.Valid([]byte(cand)) {
			return json.RawMessage(cand), unbalanced, nil
		}
		if firstBad == nil {
			var v any
			firstBad = json.Unmarshal([]byte(cand), &v)
		}
		from = end // an invalid object's insides are not the reply either
	}
	switch {
	case unbalanced:
		return nil, true, errUnbalanced()
	case firstBad != nil:
		return nil, false, core.E(core.CodeSummary, "checkpoint reply: the JSON object is malformed", errors.Join(ErrBadJSON, firstBad))
	}
	return nil, false, core.E(core.CodeSummary, "checkpoint reply: no JSON object found", ErrNoObject)
}

func errUnbalanced() error {
	return core.E(core.CodeSummary, "checkpoint reply: a JSON object is opened and never closed", ErrUnbalanced)
}

// maxCandidates bounds how many '{' positions FirstObject tries, so a reply
// full of stray braces costs linear time in practice.
const maxCandidates = 64

// balancedEnd returns the index just past the '}' that closes the '{' at
// start, counting nested braces outside strings.
func balancedEnd(text string, start int) (int, bool) {
	depth := 0
	inString, escaped := false, false
	for i := start; i < len(text); i++ {
		c := text[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}
