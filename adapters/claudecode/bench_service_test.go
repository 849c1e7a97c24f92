package claudecode

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/service"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// updateClock is a Notifier that measures, for each session/update of an
// assistant message, how long after the fake harness wrote the line it
// went out.
type updateClock struct {
	mu  sync.Mutex
	lat []time.Duration
}

func (u *updateClock) EntryAppended(e core.Entry) {
	now := time.Now().UnixNano()
	if e.Kind != core.KindAssistantMessage {
		return
	}
	var p struct {
		Text string `json:"text"`
	}
	json.Unmarshal(e.Payload, &p)
	if sent, err := strconv.ParseInt(p.Text, 10, 64); err == nil {
		u.mu.Lock()
		u.lat = append(u.lat, time.Duration(now-sent))
		u.mu.Unlock()
	}
}
func (u *updateClock) ContextCompacted(service.ContextCompacted) {}
func (u *updateClock) CheckpointSaved(service.CheckpointSaved)   {}
func (u *updateClock) Restored(service.Restored)                 {}
func (u *updateClock) Log(int, string)                           {}

// BenchmarkEventToUpdate measures the whole path Bridge adds per harness
// event: a stream-json line written by the fake `claude` -> parsed by the
// adapter -> appended to the SQLite record -> session/update handed to the
// notifier. 10,000 lines per turn, paced 100 µs apart.
func BenchmarkEventToUpdate(b *testing.B) {
	const perTurn = 10000
	ctx := context.Background()
	clock := &updateClock{}
	cfg := fakeCommand(b, "bench", "CLAUDECODE_FAKE_N="+strconv.Itoa(perTurn), "CLAUDECODE_FAKE_PACE_US=100")
	svc, err := service.New(service.Options{Store: storagetest.Open(b), Hosts: []core.BridgeHost{New(cfg)}, Notifier: clock, DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close(ctx)
	s, err := svc.Create(ctx, service.CreateParams{Harness: Harness, Cwd: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	var all []time.Duration
	b.ResetTimer()
	for range b.N {
		clock.mu.Lock()
		clock.lat = clock.lat[:0]
		clock.mu.Unlock()
		if _, err := svc.Prompt(ctx, s.ID, text("go")); err != nil {
			b.Fatal(err)
		}
		clock.mu.Lock()
		if len(clock.lat) != perTurn {
			b.Fatalf("got %d updates, want %d", len(clock.lat), perTurn)
		}
		all = append(all, clock.lat...)
		clock.mu.Unlock()
	}
	b.StopTimer()
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds())/1e3, "p50-µs/event")
	b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds())/1e3, "p99-µs/event")
}
