package checkpoint

import (
	"encoding/json"
	"reflect"
	"testing"
)

var memberCases = []string{
	`{"toolId":"t1","name":"Bash"}`,
	` { "name" : "x" , "toolId" : "t\"2\\" } `,
	`{"input":{"toolId":"nested","a":[1,{"b":"}"}]},"toolId":"outer"}`,
	`{"toolId":5}`,
	`{"toolId":null,"text":"hi \u00e9"}`,
	`{"t\u006folId":"escaped key"}`,
	`{"toolId":"first","toolId":"last"}`,
	`{"decisions":["a", 1, "b", null],"filesChanged":"x"}`,
	`{"decisions":[],"filesChanged":["p/q.go"]}`,
	`[1,2]`,
	`{}`,
	`{"a":true,"b":false,"c":-1.5e3,"toolId":"after scalars"}`,
	`{"toolId":"unterminated`,
	`{"text":"line\nbreak"}`,
	``,
}

func collect(raw []byte, key string) []string {
	var out []string
	eachMemberString(raw, key, func(b []byte) { out = append(out, string(b)) })
	return out
}

func TestMemberMatchesUnmarshal(t *testing.T) {
	for _, raw := range memberCases {
		var m map[string]any
		if json.Unmarshal([]byte(raw), &m) != nil || m == nil {
			// Not a valid object: member must not panic; any answer will do.
			memberString([]byte(raw), "toolId")
			collect([]byte(raw), "decisions")
			continue
		}
		str := func(v any) string { s, _ := v.(string); return s }
		if got := memberString([]byte(raw), "toolId"); got != str(m["toolId"]) {
			t.Errorf("%s: toolId = %q, want %q", raw, got, str(m["toolId"]))
		}
		if got := memberString([]byte(raw), "text"); got != str(m["text"]) {
			t.Errorf("%s: text = %q, want %q", raw, got, str(m["text"]))
		}
		var wantList []string
		if arr, ok := m["decisions"].([]any); ok {
			for _, v := range arr {
				if s, ok := v.(string); ok {
					wantList = append(wantList, s)
				}
			}
		}
		if got := collect([]byte(raw), "decisions"); !reflect.DeepEqual(got, wantList) {
			t.Errorf("%s: decisions = %q, want %q", raw, got, wantList)
		}
	}
}

func FuzzMember(f *testing.F) {
	for _, c := range memberCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := memberString([]byte(raw), "toolId")
		items := collect([]byte(raw), "decisions")
		// Keys match exactly (json.Unmarshal into a struct would also
		// match them case-insensitively; payload keys are exact).
		var want map[string]any
		if json.Unmarshal([]byte(raw), &want) == nil && want != nil {
			s, _ := want["toolId"].(string)
			if s != got {
				t.Fatalf("%q: got %q want %q", raw, got, s)
			}
			var strs []string
			list, _ := want["decisions"].([]any)
			for _, v := range list {
				if s, ok := v.(string); ok {
					strs = append(strs, s)
				}
			}
			if !reflect.DeepEqual(items, strs) {
				t.Fatalf("%q: decisions %q want %q", raw, items, strs)
			}
		}
	})
}
