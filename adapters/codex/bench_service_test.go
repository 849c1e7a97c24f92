package codex

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/service"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// updateClock is a Notifier that measures, for each session/update of an
// assistant message, how long after the fake app-server wrote it (the send
// time is in the item id) it went out.
type updateClock struct {
	mu  sync.Mutex
	lat []time.Duration
}

func (u *updateClock) EntryAppended(e core.Entry) {
	now := time.Now().UnixNano()
	if e.Kind != core.KindAssistantMessage {
		return
	}
	i := strings.LastIndexByte(e.NativeID, '-')
	if sent, err := strconv.ParseInt(e.NativeID[i+1:], 10, 64); err == nil {
		u.mu.Lock()
		u.lat = append(u.lat, time.Duration(now-sent))
		u.mu.Unlock()
	}
}
func (u *updateClock) ContextCompacted(service.ContextCompacted) {}
func (u *updateClock) CheckpointSaved(service.CheckpointSaved)   {}
func (u *updateClock) Restored(service.Restored)                 {}
func (u *updateClock) Log(int, string)                           {}

// BenchmarkEventToUpdate measures the whole path Bridge adds per Codex
// event: a notification written by the fake app-server -> decoded and
// mapped -> appended to the SQLite record -> session/update handed to the
// notifier. 10,000 notifications per turn, 50 µs apart.
func BenchmarkEventToUpdate(b *testing.B) {
	const n = 10000
	ctx := ctxT(b)
	clock := &updateClock{}
	host := adaptertest.AllCapable(fakeHost(b, "flood:"+strconv.Itoa(n)+":50"))
	svc, err := service.New(service.Options{Store: storagetest.Open(b), Hosts: []core.BridgeHost{host}, Notifier: clock, DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close(ctx)
	s, err := svc.Create(ctx, service.CreateParams{Harness: host.Harness(), Cwd: b.TempDir()})
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
		if len(clock.lat) != n {
			b.Fatalf("got %d updates, want %d", len(clock.lat), n)
		}
		all = append(all, clock.lat...)
		clock.mu.Unlock()
	}
	b.StopTimer()
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds())/1e3, "p50-µs/event")
	b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds())/1e3, "p99-µs/event")
}
