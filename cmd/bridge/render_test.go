package main

import (
	"strings"
	"testing"
)

func TestDescribeNewEntries(t *testing.T) {
	for _, tc := range []struct {
		kind, payload, want string
	}{
		{"approval.requested", `{"approvalId":"a1","title":"Bash: rm -rf build","kind":"execute","options":[{"optionId":"x","kind":"allow_once"},{"optionId":"y","kind":"reject_once"}]}`,
			"asks to run Bash: rm -rf build [execute]; options allow_once, reject_once (approval a1)"},
		{"approval.resolved", `{"approvalId":"a1","optionKind":"allow_always","allowed":true,"by":"user","remembered":true}`,
			`allowed (allow_always) by user, an earlier "always" (approval a1)`},
		{"approval.resolved", `{"approvalId":"a2","optionKind":"reject_once","allowed":false,"by":"timeout","reason":"no answer within 5m0s"}`,
			"rejected (reject_once) by timeout: no answer within 5m0s (approval a2)"},
		{"model.changed", `{"model":"haiku","from":"claude-sonnet-5-5[1m]","downgrade":true}`, "model claude-sonnet-5-5[1m] -> haiku (downgrade)"},
		{"effort.changed", `{"effort":"high","from":"low"}`, "effort low -> high"},
		{"user.message", `{"text":"hi"}`, "hi"},
		{"tool.started", `{"toolId":"t1","name":"Bash","input":{"command":"ls"}}`, `Bash {"command":"ls"}`},
		{"tool.completed", `{"toolId":"t1","name":"Bash","output":"a.go","isError":true}`, "Bash failed: a.go"},
		{"checkpoint", `{"reason":"manual","summary":"parser done"}`, "checkpoint (manual): parser done"},
		{"context.usage", `{"used":5}`, `{"used":5}`},
	} {
		if got := describe(tc.kind, []byte(tc.payload)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.kind, got, tc.want)
		}
	}
	// A title from the model cannot move the cursor or clear the screen.
	got := describe("approval.requested", []byte(`{"approvalId":"a","title":"x\u001b[2J\nnext"}`))
	if strings.ContainsAny(got, "\x1b\n") {
		t.Errorf("control characters printed: %q", got)
	}
}
