package checkpoint

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

func TestParseReply(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    Draft
		wantErr error
	}{
		{
			name: "bare object",
			text: `{"summary":"Ported the parser.","decisions":["use v1"],"filesTouched":["a.go"],"openWork":["tests"]}`,
			want: Draft{Summary: "Ported the parser.", Decisions: []string{"use v1"}, FilesTouched: []string{"a.go"}, OpenWork: []string{"tests"}},
		},
		{
			name: "fenced block",
			text: "```json\n{\"summary\": \"Done.\", \"decisions\": [], \"filesTouched\": [\"x/y.go\"]}\n```",
			want: Draft{Summary: "Done.", FilesTouched: []string{"x/y.go"}},
		},
		{
			name: "prose preamble and trailer",
			text: "Sure! Here is the checkpoint you asked for:\n{\"summary\":\"S\"}\nLet me know if you need more.",
			want: Draft{Summary: "S"},
		},
		{
			name: "braces inside strings",
			text: `{"summary":"map {a} to }b{ and {{c}}","decisions":["keep } as is"]}`,
			want: Draft{Summary: "map {a} to }b{ and {{c}}", Decisions: []string{"keep } as is"}},
		},
		{
			name: "escaped quotes and backslashes",
			text: `{"summary":"he said \"use {x}\" and left a \\","openWork":["quote \"}\" here"]}`,
			want: Draft{Summary: `he said "use {x}" and left a \`, OpenWork: []string{`quote "}" here`}},
		},
		{
			name: "two objects: the first wins",
			text: `{"summary":"first"} and then {"summary":"second"}`,
			want: Draft{Summary: "first"},
		},
		{
			name: "nested object and unknown members ignored",
			text: `{"summary":"N","meta":{"deep":{"x":[1,{"y":"}"}]}},"sourceAgent":"zzz","decisions":["d"]}`,
			want: Draft{Summary: "N", Decisions: []string{"d"}},
		},
		{
			name: "prose braces before the object are passed over",
			text: `Format {like this} is not JSON. {"summary":"real"}`,
			want: Draft{Summary: "real"},
		},
		{
			name: "normalised: trimmed, empties dropped, first occurrence kept",
			text: `{"summary":"  S  ","decisions":[" a ","","a","b","  "],"filesTouched":["f","f "," g"],"openWork":null}`,
			want: Draft{Summary: "S", Decisions: []string{"a", "b"}, FilesTouched: []string{"f", "g"}},
		},
		{
			name: "a single string list is one item",
			text: `{"summary":"S","decisions":"only one"}`,
			want: Draft{Summary: "S", Decisions: []string{"only one"}},
		},
		{name: "no object", text: "I could not write a checkpoint.", wantErr: ErrNoObject},
		{name: "empty text", text: "", wantErr: ErrNoObject},
		{name: "unbalanced", text: `{"summary":"cut off here`, wantErr: ErrUnbalanced},
		{name: "unbalanced nested", text: `{"summary":"x","meta":{"a":1}`, wantErr: ErrUnbalanced},
		{name: "stray brace before the object", text: "Here is the { checkpoint: {\"summary\":\"ok\"}", want: Draft{Summary: "ok"}},
		{name: "empty summary", text: `{"summary":"   ","decisions":["a"]}`, wantErr: ErrEmptySummary},
		{name: "missing summary", text: `{"decisions":["a"]}`, wantErr: ErrEmptySummary},
		{name: "malformed object", text: `{"summary": "x",}`, wantErr: ErrBadJSON},
		{name: "summary not a string", text: `{"summary": 12}`, wantErr: ErrBadJSON},
		{name: "list of numbers", text: `{"summary": "s", "decisions": [1, 2]}`, wantErr: ErrBadJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseReply(tt.text)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if core.ErrorCode(err) != core.CodeSummary {
					t.Errorf("code = %s, want summary", core.ErrorCode(err))
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestFirstObjectStrayBracesStayLinear(t *testing.T) {
	text := strings.Repeat("{", 100000)
	if _, err := FirstObject(text); !errors.Is(err, ErrUnbalanced) {
		t.Fatalf("err = %v, want ErrUnbalanced", err)
	}
}

func TestDedupe(t *testing.T) {
	tests := []struct {
		in, want []string
	}{
		{nil, nil},
		{[]string{"", "  "}, nil},
		{[]string{"b", "a", "b", " a"}, []string{"b", "a"}},
		{[]string{"x\n", "\tx", "y"}, []string{"x", "y"}},
	}
	for _, tt := range tests {
		if got := Dedupe(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Dedupe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCheckpointValidate(t *testing.T) {
	ok := validCP("S", "a")
	tests := []struct {
		name   string
		mutate func(*Checkpoint)
		valid  bool
	}{
		{"valid", func(*Checkpoint) {}, true},
		{"wrong schema version", func(c *Checkpoint) { c.SchemaVersion = 2 }, false},
		{"empty summary", func(c *Checkpoint) { c.Summary = " \n" }, false},
		{"empty decision", func(c *Checkpoint) { c.Decisions = []string{"a", ""} }, false},
		{"duplicate file", func(c *Checkpoint) { c.FilesTouched = []string{"f", "f"} }, false},
		{"duplicate open work", func(c *Checkpoint) { c.OpenWork = []string{"w", "w"} }, false},
		{"unknown reason", func(c *Checkpoint) { c.Reason = "warm_idle_timeout" }, false},
		{"unknown provenance", func(c *Checkpoint) { c.Provenance = "model" }, false},
		{"negative tokens", func(c *Checkpoint) { c.TokensBefore = -1 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			c.Decisions = append([]string(nil), ok.Decisions...)
			tt.mutate(&c)
			err := c.Validate()
			if (err == nil) != tt.valid {
				t.Fatalf("Validate() = %v, valid want %v", err, tt.valid)
			}
			if err != nil && core.ErrorCode(err) != core.CodeInvalid {
				t.Errorf("code = %s, want invalid", core.ErrorCode(err))
			}
			// The payload round-trips through ParsePayload with the same verdict.
			got, perr := ParsePayload(c.Payload())
			if (perr == nil) != tt.valid {
				t.Fatalf("ParsePayload = %v, valid want %v", perr, tt.valid)
			}
			if tt.valid && !reflect.DeepEqual(got, c) {
				t.Errorf("round trip: got %#v want %#v", got, c)
			}
		})
	}
}

func TestPayloadIsCamelCase(t *testing.T) {
	c := validCP("S")
	c.FirstRetainedEntryID, c.TokensBefore, c.Decisions = "r1", 42, nil
	s := string(c.Payload())
	for _, k := range []string{`"schemaVersion":1`, `"summary":"S"`, `"decisions":[]`, `"filesTouched":[]`,
		`"sourceAgent":"s1"`, `"firstRetainedEntryId":"r1"`, `"tokensBefore":42`, `"reason":"manual"`, `"provenance":"agent"`} {
		if !strings.Contains(s, k) {
			t.Errorf("payload %s lacks %s", s, k)
		}
	}
	if strings.Contains(s, "openWork") {
		t.Errorf("empty openWork should be omitted: %s", s)
	}
	if err := (core.NewEntry{Kind: core.KindCheckpoint, Payload: c.Payload()}).Validate(); err != nil {
		t.Errorf("checkpoint entry invalid: %v", err)
	}
}

func TestCommitEntries(t *testing.T) {
	c := validCP("S", "d")
	c.FirstRetainedEntryID = "m1"
	es := CommitEntries(c, "c1", "m1")
	kinds := []core.Kind{core.KindCheckpoint, core.KindCompaction, core.KindBranchSummary}
	if len(es) != 3 {
		t.Fatalf("got %d entries", len(es))
	}
	for i, e := range es {
		if e.Kind != kinds[i] {
			t.Errorf("entry %d kind %s, want %s", i, e.Kind, kinds[i])
		}
		if err := e.Validate(); err != nil {
			t.Errorf("entry %d: %v", i, err)
		}
	}
	if es[0].ID != "c1" || es[2].ID != "m1" {
		t.Errorf("ids = %q, %q", es[0].ID, es[2].ID)
	}
	if !strings.Contains(string(es[1].Payload), `"checkpointEntryId":"c1"`) || !strings.Contains(string(es[1].Payload), `"summary":"S"`) {
		t.Errorf("boundary payload = %s", es[1].Payload)
	}
}

func FuzzParseReply(f *testing.F) {
	for _, s := range []string{`{"summary":"s"}`, "```json\n{\"summary\":\"a{b}\"}\n```", `{"summary":"\"}"`, `x { y`, `{"decisions":[1]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		d, err := ParseReply(text)
		if err != nil {
			if core.ErrorCode(err) != core.CodeSummary {
				t.Fatalf("error code %s: %v", core.ErrorCode(err), err)
			}
			return
		}
		if d.Summary == "" || !reflect.DeepEqual(d, d.Normalize()) {
			t.Fatalf("accepted %#v", d)
		}
	})
}
