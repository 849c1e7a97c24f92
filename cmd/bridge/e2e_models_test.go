package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// requestModel is the model a Messages request names.
func requestModel(r fakemodel.Request) string {
	var b struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(r.Body, &b)
	return b.Model
}

// TestE2EClaudeModelDowngrade: on a live Claude Code session, switching
// from "sonnet[1m]" (a 1M window) to "haiku" (200k) is a downgrade: the
// before_downgrade checkpoint is written first, by the session on its old
// model, then model.changed is recorded, and the next turn's request to the
// model names the new model.
func TestE2EClaudeModelDowngrade(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{})
	h.onText(checkpointMarker, inProse(checkpointJSON("CKPT-DOWN: port 55837 chosen before switching models")))
	h.onText("port 55837", "Understood: port 55837 in internal/server/listen.go.")
	h.onText("after the switch", "Still here, on the smaller model.")
	c := h.start(t)
	s := rpctest.Must(c.Client, c.SessionCreate, schema.SessionCreateParams{Harness: "claude-code", Cwd: h.cwd, Title: "downgrade", Model: "sonnet[1m]"})
	sid := s.SessionID
	say(t, c, sid, "The server must listen on port 55837; the listener is in internal/server/listen.go.")

	models := rpctest.Must(c.Client, c.SessionModels, schema.SessionModelsParams{SessionID: sid})
	var haiku int64
	for _, m := range models.Models {
		if m.ID == "haiku" {
			haiku = m.ContextWindow
		}
	}
	// The record holds what runs: Claude Code's own id, with the window.
	if !strings.Contains(models.Model, "sonnet") || !strings.HasSuffix(models.Model, "[1m]") || haiku != 200000 {
		t.Fatalf("session/models = %+v", models)
	}

	before := len(h.fake.Requests())
	res := rpctest.Must(c.Client, c.SessionSelectModel, schema.SessionSelectModelParams{SessionID: sid, Model: "haiku"})
	if !res.Downgrade || res.CheckpointEntryID == "" || res.Model != "haiku" {
		t.Fatalf("session/selectModel = %+v", res)
	}
	// The checkpoint was asked of the old model.
	var ckpt []fakemodel.Request
	for _, r := range h.fake.Requests()[before:] {
		if strings.Contains(r.LastUserText, checkpointMarker) {
			ckpt = append(ckpt, r)
		}
	}
	if len(ckpt) != 1 || !strings.Contains(requestModel(ckpt[0]), "sonnet") {
		t.Fatalf("checkpoint requests %d, model %q: want one, on the old (sonnet) model", len(ckpt), requestModel(ckpt[0]))
	}
	es := history(t, c, sid)
	cp, changed := -1, -1
	for i, e := range es {
		switch e.Kind {
		case "checkpoint":
			if payloadOf(t, e)["reason"] == "before_downgrade" && e.ID == res.CheckpointEntryID {
				cp = i
			}
		case "model.changed":
			p := payloadOf(t, e)
			if p["model"] == "haiku" && p["from"] == models.Model && p["downgrade"] == true {
				changed = i
			}
		}
	}
	if cp < 0 || changed < 0 || cp > changed {
		t.Fatalf("record %v: want the before_downgrade checkpoint, then model.changed", kinds(es))
	}

	next := len(h.fake.Requests())
	say(t, c, sid, "Are you there after the switch?")
	var turn []fakemodel.Request
	for _, r := range h.fake.Requests()[next:] {
		if strings.Contains(r.LastUserText, "after the switch") {
			turn = append(turn, r)
		}
	}
	if len(turn) == 0 || !strings.Contains(requestModel(turn[0]), "haiku") {
		m := ""
		if len(turn) > 0 {
			m = requestModel(turn[0])
		}
		t.Fatalf("the next turn's request names model %q, want haiku's", m)
	}
}
