package acp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/acp"
	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// BenchmarkCheckpointMethods: adaptertest.BenchCheckpointMethods on one
// session of the real claude-agent-acp against the fake model (its fork is
// the unstable session/fork in a second agent process).
func BenchmarkCheckpointMethods(b *testing.B) {
	bin := adaptertest.FindBinary(b, "claude-agent-acp")
	fake, err := fakemodel.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer fake.Close()
	fake.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		if strings.Contains(r.LastUserText, "Bridge checkpoint request") {
			return fakemodel.Reply{Text: adaptertest.BenchCheckpointReply}, true
		}
		return fakemodel.Reply{Text: "Noted: turn answered."}, true
	})
	home := b.TempDir()
	h := acp.New(acp.Config{Name: "acp", Command: bin, Env: append([]string{"HOME=" + home}, anthropicEnv(nil, fake, home)...)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: b.TempDir()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(ctx)
	adaptertest.BenchCheckpointMethods(b, ctx, l, func() string {
		rs := fake.Requests()
		for i := len(rs) - 1; i >= 0; i-- {
			if strings.Contains(rs[i].LastUserText, adaptertest.BenchOrdinaryTurn) {
				return string(rs[i].Body)
			}
		}
		return ""
	})
}
