// Command testserver is Bridge's rpc server over stdio with an in-memory
// fake backend, for client interop tests until cmd/bridge is wired. Its
// session/prompt records the prompt and a reply as two entries (each sent
// as session/update); the prompt text "hang" (as with adapters/fake) or
// "slow" blocks until the request is cancelled.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/service"
	"github.com/bridge-dev/bridge/rpc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	code, err := rpc.Serve(ctx, os.Stdin, os.Stdout, rpc.Config{
		Version:   "testserver",
		Harnesses: []string{"fake"},
		Logger:    log,
		Open: func(ctx context.Context, opts rpc.InitOptions, n service.Notifier, _ rpc.Caller) (rpc.Backend, error) {
			return &memory{n: n, sessions: map[string]*session{}}, nil
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
	}
	os.Exit(code)
}

type session struct {
	head    core.Session
	entries []core.Entry
}

// memory is an in-memory Backend.
type memory struct {
	n        service.Notifier
	mu       sync.Mutex
	seq      int
	sessions map[string]*session
}

func (m *memory) get(id string) (*session, error) {
	s, ok := m.sessions[id]
	if !ok {
		return nil, core.NotFound("session", id)
	}
	return s, nil
}

func (m *memory) Create(_ context.Context, p service.CreateParams) (core.Session, error) {
	if p.Harness != "fake" {
		return core.Session{}, core.Errorf(core.CodeUnavailable, "harness %q is not available in the test server", p.Harness)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	now := time.Now().UTC()
	s := &session{head: core.Session{ID: "sess-" + strconv.Itoa(m.seq), Harness: p.Harness, Cwd: p.Cwd, Title: p.Title,
		CreatedAt: now, UpdatedAt: now}}
	m.sessions[s.head.ID] = s
	return s.head, nil
}

func (m *memory) append(id string, kind core.Kind, text string) (core.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.get(id)
	if err != nil {
		return core.Entry{}, err
	}
	m.seq++
	e := core.Entry{ID: "e-" + strconv.Itoa(m.seq), SessionID: id, Seq: int64(len(s.entries) + 1), Kind: kind,
		Payload: core.Payload(map[string]string{"text": text}), CreatedAt: time.Now().UTC()}
	if len(s.entries) > 0 {
		e.ParentID = s.entries[len(s.entries)-1].ID
	}
	s.entries = append(s.entries, e)
	s.head.UpdatedAt = e.CreatedAt
	return e, nil
}

func (m *memory) Prompt(ctx context.Context, id string, content []core.Content) (core.TurnResult, error) {
	var text string
	for _, c := range content {
		text += c.Text
	}
	e, err := m.append(id, core.KindUserMessage, text)
	if err != nil {
		return core.TurnResult{}, err
	}
	m.n.EntryAppended(e)
	if text == "slow" || text == "hang" { // "hang" as adapters/fake's directive
		<-ctx.Done()
		return core.TurnResult{}, core.E(core.CodeCancelled, "turn cancelled", core.ErrCancelled)
	}
	e, err = m.append(id, core.KindAssistantMessage, "echo: "+text)
	if err != nil {
		return core.TurnResult{}, err
	}
	m.n.EntryAppended(e)
	return core.TurnResult{StopReason: "end_turn"}, nil
}

func (m *memory) Cancel(context.Context, string) error { return nil }

func (m *memory) Rename(_ context.Context, id, title string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.get(id)
	if err == nil {
		s.head.Title = title
	}
	return err
}

func (m *memory) Archive(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.get(id)
	if err == nil {
		s.head.Archived = true
	}
	return err
}

func (m *memory) History(_ context.Context, id string, before int64, maxMessages int) ([]core.Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.get(id)
	if err != nil {
		return nil, false, err
	}
	end := len(s.entries)
	if before > 0 {
		end = min(end, int(before-1))
	}
	start := 0
	if maxMessages > 0 {
		start = max(0, end-maxMessages)
	}
	return slices.Clone(s.entries[start:end]), start > 0, nil
}

func (m *memory) List(_ context.Context, q core.ListQuery) ([]core.Session, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []core.Session
	for _, s := range m.sessions {
		if !s.head.Archived || q.IncludeArchived {
			out = append(out, s.head)
		}
	}
	slices.SortFunc(out, func(a, b core.Session) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	return out, "", nil
}

func (m *memory) Resume(_ context.Context, id string, fresh bool) (service.Restored, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.get(id); err != nil {
		return service.Restored{}, err
	}
	r := service.Restored{SessionID: id, Mode: core.ModeHot}
	if fresh {
		r.Mode = core.ModeFresh
	}
	m.n.Restored(r)
	return r, nil
}

func (m *memory) Compact(context.Context, string, string) (service.CompactOutcome, error) {
	return service.CompactOutcome{}, core.Errorf(core.CodeUnsupported, "the test server does not compact")
}

func (m *memory) Checkpoint(context.Context, string, string) (service.CheckpointOutcome, error) {
	return service.CheckpointOutcome{}, core.Errorf(core.CodeUnsupported, "the test server does not checkpoint")
}

func (m *memory) Import(context.Context, string, string) (service.ImportOutcome, error) {
	return service.ImportOutcome{}, core.Errorf(core.CodeUnsupported, "the test server does not import")
}

func (m *memory) Doctor(context.Context, string) (service.DoctorReport, error) {
	return service.DoctorReport{Adapters: []service.AdapterReport{{Probe: core.Probe{Harness: "fake"}, OK: true}}}, nil
}

func (m *memory) MigrationPreview(context.Context, service.PreviewRequest) (service.Preview, error) {
	return service.Preview{}, core.Errorf(core.CodeUnsupported, "the test server does not migrate")
}

func (m *memory) MigrationExecute(context.Context, service.ExecuteRequest) (service.ExecuteOutcome, error) {
	return service.ExecuteOutcome{}, core.Errorf(core.CodeUnsupported, "the test server does not migrate")
}

func (m *memory) Close(context.Context) error { return nil }
