package dsh_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/dsh"
	"github.com/bridge-dev/bridge/core"
)

// realDSH returns the URL of a real DSH web server from BRIDGE_DSH_URL
// (e.g. http://127.0.0.1:38917/api of `dsh web --no-open --host 127.0.0.1
// --port 38917`, DSH 0.1.0-rc.8 on Node 22, with DEEPSEEK_BASE_URL pointing
// at a fake model server on loopback; see reference/dsh/README.md).
//
// The real DSH is optional by design: it needs Node 22 and a pinned npm
// install this machine does not have, and the issue keeps it behind an
// environment variable. So, when BRIDGE_DSH_URL is unset, the test is
// reported as not run through t.Skip with that reason — the one skip this
// project permits — unless BRIDGE_DSH_REQUIRED=1, which turns the missing
// server into a failure.
func realDSH(t *testing.T) string {
	t.Helper()
	url := os.Getenv("BRIDGE_DSH_URL")
	if url == "" {
		if os.Getenv("BRIDGE_DSH_REQUIRED") == "1" {
			t.Fatal("BRIDGE_DSH_REQUIRED=1 but BRIDGE_DSH_URL is unset: start `dsh web --no-open --host 127.0.0.1 --port P` (Node 22) and set BRIDGE_DSH_URL=http://127.0.0.1:P/api")
		}
		t.Skip("not run: BRIDGE_DSH_URL is unset (the real DSH web server is optional; set it, and BRIDGE_DSH_REQUIRED=1 to make its absence fail)")
	}
	return url
}

// TestRealDSH drives a real DSH web server: probe, a turn, history,
// /compact, resume of a bogus id, archive.
func TestRealDSH(t *testing.T) {
	url := realDSH(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := dsh.New(dsh.Config{BaseURL: url})
	if miss := h.Probe(ctx).Missing(core.RequiredCapabilities...); len(miss) > 0 {
		t.Fatalf("required capabilities missing on %s: %v", url, miss)
	}
	rec := adaptertest.NewEvents()
	live, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, rec.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close(ctx)
	res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "Say hello"}})
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt: %+v %v", res, err)
	}
	if a := texts(t, rec.Entries(), core.KindAssistantMessage); len(a) == 0 || a[0] == "" {
		t.Fatalf("no assistant text: %+v", rec.Entries())
	}
	hist, err := h.History(ctx, live.NativeID())
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, hist)
	before := len(rec.Entries())
	if _, err := live.(core.Compactor).Compact(ctx, ""); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if cs := compacted(t, rec.Entries()[before:]); len(cs) != 1 || cs[0].Trigger != core.TriggerManual {
		t.Errorf("context.compacted after /compact: %+v", cs)
	}
	_, err = h.Resume(ctx, core.ResumeRequest{NativeID: "session-00000000-0000-4000-8000-000000000000"}, nil)
	var re *core.ResumeError
	if !errors.As(err, &re) || re.NativeText == "" {
		t.Errorf("resume of a bogus id: %v", err)
	}
	if err := h.ArchiveSession(ctx, live.NativeID()); err != nil {
		t.Errorf("archive: %v", err)
	}
}

// TestRealDSHConformance runs the shared suite against a real DSH web
// server, taking the probe's word for the claims.
func TestRealDSHConformance(t *testing.T) {
	url := realDSH(t)
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost { return dsh.New(dsh.Config{BaseURL: url}) },
	})
}
