package codex

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// BenchmarkCheckpointMethods: adaptertest.BenchCheckpointMethods on one
// real Codex thread against the fake model (its fork is thread/fork in a
// second app-server process).
func BenchmarkCheckpointMethods(b *testing.B) {
	env := newE2E(b)
	env.model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		if strings.Contains(r.LastUserText, "Bridge checkpoint request") {
			return fakemodel.Reply{Text: adaptertest.BenchCheckpointReply}, true
		}
		return fakemodel.Reply{Text: "Noted: turn answered."}, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(ctx)
	thread := l.NativeID()
	adaptertest.BenchCheckpointMethods(b, ctx, l, func() string {
		rs := env.model.Requests()
		for i := len(rs) - 1; i >= 0; i-- {
			if strings.Contains(rs[i].LastUserText, adaptertest.BenchOrdinaryTurn) && strings.Contains(string(rs[i].Body), thread) {
				return string(rs[i].Body)
			}
		}
		return ""
	})
}
