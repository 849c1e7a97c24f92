package core

import (
	"encoding/json"
	"strings"
	"testing"
)

// validJSON must accept and refuse exactly what json.Valid does, since
// Validate used json.Valid and a payload it accepted must stay accepted.
func TestValidJSONAgreesWithEncodingJSON(t *testing.T) {
	cases := []string{
		``, ` `, `{}`, ` {} `, "{}\n", `{`, `}`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{"a":1}{}`, `{} 1`, `1 2`,
		`[]`, `[1,]`, `null`, `nul`, `true`, `"x"`, `"x`, `-0`, `-`, `01`, `1.`, `1.5e+3`, `1e`, `.5`, `+1`,
		`{"a":1,"a":2}`, `{"a":"\ud800"}`, `{"a":"\udc00\ud800"}`, "{\"a\":\"\xff\xfe\"}", "{\"a\":\"\x01\"}",
		`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u00e9\n\t\"\\\/"}`, `{"a":[1,{"b":null}],"c":{"d":[]}}`,
		`{a:1}`, `{'a':1}`, "{\"a\":1}\x00", "\ufeff{}", `{"a":NaN}`, `{"a":Infinity}`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat("[", 9990) + strings.Repeat("]", 9990),
	}
	for _, c := range cases {
		if got, want := validJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			n := min(len(c), 40)
			t.Errorf("validJSON(%q…) = %v, json.Valid = %v", c[:n], got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,"x",null]`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}

// BenchmarkValidJSON compares validJSON with json.Valid on a tool call's
// payload, the kind Validate checks most.
func BenchmarkValidJSON(b *testing.B) {
	payload := []byte(`{"toolId":"toolu_01ABCDEF","name":"Bash","input":{"command":"go test ./... -run 'TestX' -count=1",` +
		`"description":"Run the tests"},"output":"ok  \tgithub.com/bridge-dev/bridge/core\t0.028s\n","isError":false,` +
		`"durationMs":1234,"nums":[1,2.5,-3e10,0]}`)
	b.Run("impl=validJSON", func(b *testing.B) {
		for b.Loop() {
			validJSON(payload)
		}
	})
	b.Run("impl=json.Valid", func(b *testing.B) {
		for b.Loop() {
			json.Valid(payload)
		}
	})
}
