package servicetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// BenchEventToUpdate measures the whole path Bridge adds per harness event:
// host's fake harness writes perTurn events each turn (the prompt "go"
// starts one), the adapter maps them, the service appends them to a real
// SQLite record and hands session/update to the client. sentAt returns
// the time the fake wrote an assistant.message entry (the benchmark's own
// stamp in it) and false for entries it should not count. Reports p50 and
// p99 in µs.
func BenchEventToUpdate(b *testing.B, host core.BridgeHost, perTurn int, sentAt func(core.Entry) (int64, bool)) {
	ctx := context.Background()
	clock := &updateClock{sentAt: sentAt}
	svc, err := service.New(service.Options{Store: storagetest.Open(b), Hosts: []core.BridgeHost{host}, Notifier: clock, DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close(ctx)
	s, err := svc.SessionCreate(ctx, schema.SessionCreateParams{Harness: host.Harness(), Cwd: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	var all []time.Duration
	b.ResetTimer()
	for range b.N {
		clock.reset()
		if _, err := svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: s.SessionID, Content: []schema.Content{{Type: "text", Text: "go"}}}); err != nil {
			b.Fatal(err)
		}
		lat := clock.take()
		if len(lat) != perTurn {
			b.Fatalf("got %d updates, want %d", len(lat), perTurn)
		}
		all = append(all, lat...)
	}
	b.StopTimer()
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds())/1e3, "p50-µs/event")
	b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds())/1e3, "p99-µs/event")
}

// updateClock is a Notifier that times each session/update it is handed.
type updateClock struct {
	sentAt func(core.Entry) (int64, bool)
	mu     sync.Mutex
	lat    []time.Duration
}

func (u *updateClock) EntryAppended(e core.Entry) {
	now := time.Now().UnixNano()
	if sent, ok := u.sentAt(e); ok {
		u.mu.Lock()
		u.lat = append(u.lat, time.Duration(now-sent))
		u.mu.Unlock()
	}
}
func (u *updateClock) ContextCompacted(service.ContextCompacted) {}
func (u *updateClock) CheckpointSaved(service.CheckpointSaved)   {}
func (u *updateClock) Restored(service.Restored)                 {}
func (u *updateClock) Log(int, string)                           {}

func (u *updateClock) reset() {
	u.mu.Lock()
	u.lat = u.lat[:0]
	u.mu.Unlock()
}

func (u *updateClock) take() []time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]time.Duration(nil), u.lat...)
}
