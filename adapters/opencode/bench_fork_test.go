package opencode

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
// real OpenCode session against the fake model (its fork is a copy on the
// same server: no process starts).
func BenchmarkCheckpointMethods(b *testing.B) {
	bin := adaptertest.FindBinary(b, "opencode")
	model, err := fakemodel.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer model.Close()
	model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		switch {
		case strings.Contains(strings.ToLower(string(r.Body)), "title generator"):
			return fakemodel.Reply{Text: "A title"}, true
		case strings.Contains(r.LastUserText, "Bridge checkpoint request"):
			return fakemodel.Reply{Text: adaptertest.BenchCheckpointReply}, true
		}
		return fakemodel.Reply{Text: "Noted: turn answered."}, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	h := New(Config{Command: bin, Home: b.TempDir(), ConfigJSON: fakeProviderConfig(model.URL), Env: offlineEnv,
		StartTimeout: 5 * time.Minute})
	defer h.Close(context.Background())
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: b.TempDir()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(ctx)
	adaptertest.BenchCheckpointMethods(b, ctx, l, func() string {
		rs := model.Requests()
		for i := len(rs) - 1; i >= 0; i-- {
			if strings.Contains(rs[i].LastUserText, adaptertest.BenchOrdinaryTurn) && !strings.Contains(strings.ToLower(string(rs[i].Body)), "title generator") {
				return string(rs[i].Body)
			}
		}
		return ""
	})
}
