package core

import (
	"encoding/json"
	"testing"
)

// TestValidateRequiredMembers: Validate finds the required members of a
// payload among its top-level members only (a nested member of the same
// name does not count), reads escaped member names, and refuses payloads
// that are not JSON objects.
func TestValidateRequiredMembers(t *testing.T) {
	for _, tc := range []struct {
		payload string
		ok      bool
	}{
		{`{"text":"hi"}`, true},
		{` { "a" : {"text": 1}, "text" : [1, {"x":"}"}] } `, true},
		{`{"a":{"text":"nested only"}}`, false},
		{`{"te\u0078t":"escaped name"}`, true},
		{`{"a":"text","b":"\"text\":"}`, false},
		{`["text"]`, false},
		{`"text"`, false},
		{`{"text":}`, false},
		{`null`, false},
	} {
		err := NewEntry{Kind: KindUserMessage, Payload: json.RawMessage(tc.payload)}.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tc.payload, err, tc.ok)
		}
		if err != nil && ErrorCode(err) != CodeInvalid {
			t.Errorf("%s: code %s, want invalid", tc.payload, ErrorCode(err))
		}
	}
}
