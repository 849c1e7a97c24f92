package postgres

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/bridge-dev/bridge/core"
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
	if i >= len(s.raw) || s.b.Len() > maxIndexedText {
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

// The text an entry contributes to search is storage's (SearchText
// there): the same kinds, the same members, the same 64 KiB.

// maxIndexedText bounds the text one entry contributes to the index.
const maxIndexedText = 64 << 10

// searchKinds are the kinds whose text is indexed.
var searchKinds = map[core.Kind]bool{
	core.KindUserMessage: true, core.KindAssistantMessage: true,
	core.KindToolStarted: true, core.KindToolCompleted: true,
	core.KindApprovalRequested: true, core.KindWorkerResult: true, core.KindArtifactCreated: true,
	core.KindContextCompacted: true, core.KindCheckpoint: true, core.KindBranchSummary: true,
	core.KindMigrationHandoff: true, core.KindCompactionFailed: true, core.KindSessionResumeFail: true,
	core.KindPlanUpdated: true,
}

// skipKey reports whether a payload member holds an identifier or a code,
// not text a user would search for.
func skipKey(k string) bool {
	switch k {
	case "id", "sha256", "mediaType", "type", "harness", "trigger", "provenance", "status", "mode", "data",
		"model", "effort", "role", "finish", "agent", "cwd", "root", "raw":
		return true
	}
	return strings.HasSuffix(k, "Id") || strings.HasSuffix(k, "ID") || strings.HasSuffix(k, "Ids")
}

// SearchText is the searchable text of an entry ("" when it has none).
func SearchText(kind core.Kind, payload []byte) string {
	if !searchKinds[kind] {
		return ""
	}
	var b strings.Builder
	(&textScanner{raw: payload, b: &b}).value(0, false)
	s := b.String()
	if len(s) > maxIndexedText {
		s = strings.ToValidUTF8(s[:maxIndexedText], "")
	}
	return strings.TrimSpace(s)
}
