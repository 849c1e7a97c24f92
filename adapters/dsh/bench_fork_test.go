package dsh_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/dsh"
	"github.com/bridge-dev/bridge/adapters/dsh/dshtest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// BenchmarkCheckpointMethods: adaptertest.BenchCheckpointMethods on one
// session of the real DeepSeek Harness web server against the fake model
// (its fork is session.fork on the same server: no process starts).
func BenchmarkCheckpointMethods(b *testing.B) {
	model, err := fakemodel.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer model.Close()
	model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		if strings.Contains(r.LastUserText, "Bridge checkpoint request") {
			return fakemodel.Reply{Text: adaptertest.BenchCheckpointReply}, true
		}
		return fakemodel.Reply{Text: "Noted: turn answered."}, true
	})
	r := dshtest.StartReal(b, model.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	h := dsh.New(dsh.Config{BaseURL: r.URL, PollInterval: 20 * time.Millisecond})
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: b.TempDir()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(ctx)
	adaptertest.BenchCheckpointMethods(b, ctx, l, func() string {
		rs := model.Requests()
		for i := len(rs) - 1; i >= 0; i-- {
			if strings.Contains(rs[i].LastUserText, adaptertest.BenchOrdinaryTurn) {
				return string(rs[i].Body)
			}
		}
		return ""
	})
}
