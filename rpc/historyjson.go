package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/bridge-dev/bridge/schema"
)

// session/history is the hot read path: its result is written here without
// reflection and without schema.Entry's MarshalJSON (which re-encodes and
// re-compacts every entry). The JSON value is the one json.Marshal gives
// for the schema type (a test decodes both and compares them): payloads
// that are already compact JSON, as the store keeps them, are copied as
// they are; any other payload is compacted, and one that is not JSON fails
// the request as json.Marshal would.

// appendHistory appends the JSON of a session/history result to b.
func appendHistory(b []byte, h schema.SessionHistoryResult) ([]byte, error) {
	b = append(b, `{"entries":[`...)
	for i := range h.Entries {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendEntry(b, &h.Entries[i]); err != nil {
			return nil, err
		}
	}
	b = append(b, `],"hasMore":`...)
	b = strconv.AppendBool(b, h.HasMore)
	if h.HasNewer != nil {
		b = append(b, `,"hasNewer":`...)
		b = strconv.AppendBool(b, *h.HasNewer)
	}
	return append(b, '}'), nil
}

// historySize guesses the encoded size of a result, to allocate once.
func historySize(h schema.SessionHistoryResult) int {
	n := 32
	for i := range h.Entries {
		n += len(h.Entries[i].Payload) + 256
	}
	return n
}

func appendEntry(b []byte, e *schema.Entry) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendString(b, e.ID)
	b = append(b, `,"sessionId":`...)
	b = appendString(b, e.SessionID)
	if e.ParentID != "" {
		b = append(b, `,"parentId":`...)
		b = appendString(b, e.ParentID)
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"kind":`...)
	b = appendString(b, e.Kind)
	b = append(b, `,"payload":`...)
	switch {
	case len(e.Payload) == 0:
		b = append(b, "{}"...)
	case isCompactJSON(e.Payload):
		b = append(b, e.Payload...)
	default:
		var buf bytes.Buffer
		if err := json.Compact(&buf, e.Payload); err != nil {
			return nil, fmt.Errorf("entry %s: payload: %w", e.ID, err)
		}
		b = append(b, buf.Bytes()...)
	}
	if e.NativeID != "" {
		b = append(b, `,"nativeId":`...)
		b = appendString(b, e.NativeID)
	}
	if e.TokenEstimate != 0 {
		b = append(b, `,"tokenEstimate":`...)
		b = strconv.AppendInt(b, e.TokenEstimate, 10)
	}
	b = append(b, `,"createdAt":`...)
	if y := e.CreatedAt.Year(); y < 0 || y > 9999 {
		// time.Time's MarshalJSON refuses these; so does the page.
		t, err := e.CreatedAt.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("entry %s: createdAt: %w", e.ID, err)
		}
		b = append(b, t...)
	} else {
		b = append(b, '"')
		b = e.CreatedAt.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

// appendString appends s as a JSON string: as it is when it needs no
// escaping (ids and kinds always), else as encoding/json writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// isCompactJSON reports whether b is exactly one JSON value with no
// whitespace outside its strings.
func isCompactJSON(b []byte) bool {
	i, ok := compactValue(b, 0, 0)
	return ok && i == len(b)
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// compactValue checks the value starting at b[i] and returns the index
// after it.
func compactValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > maxDepth {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		i++
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = compactString(b, i); !ok {
				return i, false
			}
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = compactValue(b, i+1, depth+1); !ok || i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i++
			case '}':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '[':
		i++
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = compactValue(b, i, depth+1); !ok || i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i++
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '"':
		return compactString(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return number(b, i)
	}
	return i, false
}

func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i >= len(word) && string(b[i:i+len(word)]) == word {
		return i + len(word), true
	}
	return i, false
}

// compactString checks the string starting at b[i] (which must be '"').
func compactString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 {
					return i, false
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

// number checks the number starting at b[i].
func number(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}
