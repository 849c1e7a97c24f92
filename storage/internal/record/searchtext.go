package record

import (
	"bytes"
	"encoding/json"
	"strings"
)

// textScanner collects the string values of a JSON document without
// decoding it into Go values (search indexing runs on every append).
// Members named by skipKey are passed over. The payload has been validated
// as JSON before it gets here; on anything unexpected the scan stops and
// keeps what it has.
type textScanner struct {
	raw []byte
	b   *strings.Builder
}

func (s *textScanner) ws(i int) int {
	for i < len(s.raw) {
		switch s.raw[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// str returns the end (one past the closing quote) of the string at i and
// whether it holds an escape; -1 when unterminated.
func (s *textScanner) str(i int) (int, bool) {
	esc := false
	for j := i + 1; j < len(s.raw); j++ {
		switch s.raw[j] {
		case '\\':
			esc = true
			j++
		case '"':
			return j + 1, esc
		}
	}
	return -1, esc
}

// value scans the value at i, writing its strings unless discard, and
// returns the index after it (-1 on malformed input).
func (s *textScanner) value(i int, discard bool) int {
	i = s.ws(i)
	if i >= len(s.raw) || s.b.Len() > MaxIndexedText {
		return -1
	}
	switch s.raw[i] {
	case '"':
		end, esc := s.str(i)
		if end < 0 {
			return -1
		}
		if !discard && end-i > 2 {
			if esc {
				var v string
				if json.Unmarshal(s.raw[i:end], &v) == nil {
					s.b.WriteString(v)
				}
			} else {
				s.b.Write(s.raw[i+1 : end-1])
			}
			s.b.WriteByte('\n')
		}
		return end
	case '{':
		i = s.ws(i + 1)
		if i < len(s.raw) && s.raw[i] == '}' {
			return i + 1
		}
		for i < len(s.raw) {
			if s.raw[i] != '"' {
				return -1
			}
			kEnd, esc := s.str(i)
			if kEnd < 0 {
				return -1
			}
			skip := discard
			if !skip {
				key := string(s.raw[i+1 : kEnd-1])
				if esc {
					_ = json.Unmarshal(s.raw[i:kEnd], &key)
				}
				skip = skipKey(key)
			}
			i = s.ws(kEnd)
			if i >= len(s.raw) || s.raw[i] != ':' {
				return -1
			}
			if i = s.value(i+1, skip); i < 0 {
				return -1
			}
			i = s.ws(i)
			if i < len(s.raw) && s.raw[i] == ',' {
				i = s.ws(i + 1)
				continue
			}
			if i < len(s.raw) && s.raw[i] == '}' {
				return i + 1
			}
			return -1
		}
		return -1
	case '[':
		i = s.ws(i + 1)
		if i < len(s.raw) && s.raw[i] == ']' {
			return i + 1
		}
		for i < len(s.raw) {
			if i = s.value(i, discard); i < 0 {
				return -1
			}
			i = s.ws(i)
			if i < len(s.raw) && s.raw[i] == ',' {
				i++
				continue
			}
			if i < len(s.raw) && s.raw[i] == ']' {
				return i + 1
			}
			return -1
		}
		return -1
	default: // number, true, false, null
		j := bytes.IndexAny(s.raw[i:], ",}] \t\n\r")
		if j < 0 {
			return len(s.raw)
		}
		return i + j
	}
}
