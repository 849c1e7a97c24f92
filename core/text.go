package core

import (
	"encoding/json"
	"time"
	"unicode/utf8"
)

// MaxSeq is the largest sequence number (and token estimate) the record
// holds: 2^53-1, the largest integer every client (a JavaScript number
// included) reads exactly, far below int64's top so that seq+1 never
// overflows.
const MaxSeq = 1<<53 - 1

// ValidText returns s as valid UTF-8: each byte that does not begin a
// valid sequence becomes U+FFFD, as encoding/json does when it decodes a
// string. It is the one rule at the record's door: every text written to
// the record (payloads, audit bodies, session fields), whoever imports it,
// goes through it, so every text a client can receive is valid UTF-8.
// Valid input is returned as it is, without a copy.
func ValidText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string(validBytes([]byte(s)))
}

// ValidJSON is ValidText for a JSON document (a payload or an audit body).
// Outside strings valid JSON is ASCII, so only bytes inside strings change,
// and the document stays valid JSON.
func ValidJSON(b json.RawMessage) json.RawMessage {
	if utf8.Valid(b) {
		return b
	}
	return validBytes(b)
}

func validBytes(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// Representable reports whether the record can hold t exactly: it stores
// times as Unix nanoseconds in an int64 (about the years 1678 to 2262), and
// a time outside that range would silently wrap (year 3000 read back as
// 1830).
func Representable(t time.Time) bool {
	return time.Unix(0, t.UnixNano()).Equal(t)
}
