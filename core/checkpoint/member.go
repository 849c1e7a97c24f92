package checkpoint

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// member returns the raw value of the top-level member key of the JSON
// object raw, without decoding the other members (the scans of this package
// read one or two small fields of large payloads). It reports false when raw
// is not an object, has no such member, or is malformed before reaching it.
// When a key appears twice, the last one wins, as with json.Unmarshal.
func member(raw []byte, key string) ([]byte, bool) {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	i++
	var found []byte
	ok := false
	for {
		i = skipWS(raw, i)
		if i >= len(raw) {
			return nil, false
		}
		if raw[i] == '}' {
			return found, ok
		}
		if raw[i] != '"' {
			return nil, false
		}
		kEnd := stringEnd(raw, i)
		if kEnd < 0 {
			return nil, false
		}
		k := raw[i:kEnd]
		i = skipWS(raw, kEnd)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipWS(raw, i+1)
		vEnd := valueEnd(raw, i)
		if vEnd < 0 {
			return nil, false
		}
		if keyIs(k, key) {
			found, ok = raw[i:vEnd], true
		}
		i = skipWS(raw, vEnd)
		if i < len(raw) && raw[i] == ',' {
			i++
		}
	}
}

// keyIs compares a quoted JSON key with key, unescaping only when needed.
func keyIs(quoted []byte, key string) bool {
	inner := quoted[1 : len(quoted)-1]
	if !strings.Contains(string(inner), `\`) && utf8.Valid(inner) {
		return string(inner) == key
	}
	var s string
	return json.Unmarshal(quoted, &s) == nil && s == key
}

// memberString returns the top-level member key of raw when it is a JSON
// string ("" otherwise).
func memberString(raw []byte, key string) string {
	v, ok := member(raw, key)
	if !ok || len(v) < 2 || v[0] != '"' {
		return ""
	}
	inner := v[1 : len(v)-1]
	if !strings.Contains(string(inner), `\`) && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

// eachMemberString calls fn with each string item of the top-level array
// member key of raw (unescaped; the slice is only valid during the call).
// Other items are skipped; a member that is not an array gives nothing.
// It allocates only for items that hold escapes.
func eachMemberString(raw []byte, key string, fn func([]byte)) {
	v, ok := member(raw, key)
	if !ok || len(v) == 0 || v[0] != '[' {
		return
	}
	i := 1
	for {
		i = skipWS(v, i)
		if i >= len(v) || v[i] == ']' {
			return
		}
		end := valueEnd(v, i)
		if end < 0 {
			return
		}
		if v[i] == '"' {
			inner := v[i+1 : end-1]
			if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
				fn(inner)
			} else {
				var s string
				if json.Unmarshal(v[i:end], &s) == nil {
					fn([]byte(s))
				}
			}
		}
		i = skipWS(v, end)
		if i < len(v) && v[i] == ',' {
			i++
		}
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd returns the index just past the JSON value starting at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}
