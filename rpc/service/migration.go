package service

import (
	"context"
	"github.com/bridge-dev/bridge/rpc/service/live"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/migrate"
	"github.com/bridge-dev/bridge/schema"
)

// MaxHandoffBytes bounds an edited handoff file read by migration/execute.
const MaxHandoffBytes = migrate.MaxHandoffBytes

// MigrationPreview is migration/preview: rpc/service/migrate has a summary
// worker write the handoff into an editable file.
func (s *Service) MigrationPreview(ctx context.Context, req schema.MigrationPreviewParams) (schema.MigrationPreviewResult, error) {
	return s.migrate.Preview(ctx, req)
}

// MigrationExecute is migration/execute: rpc/service/migrate starts the
// target from the preview.
func (s *Service) MigrationExecute(ctx context.Context, req schema.MigrationExecuteParams) (schema.MigrationExecuteResult, error) {
	return s.migrate.Execute(ctx, req)
}

// migrationSessions is the live sessions as a migration uses them
// (migrate.Sessions).
type migrationSessions struct{ s *Service }

func (m migrationSessions) Create(ctx context.Context, p schema.SessionCreateParams) (core.Session, error) {
	return m.s.sess.Create(ctx, p)
}

func (m migrationSessions) Archive(ctx context.Context, sessionID string) error {
	return m.s.sess.Archive(ctx, sessionID)
}

func (m migrationSessions) Rename(ctx context.Context, sessionID, title string) error {
	return m.s.sess.Rename(ctx, sessionID, title)
}

func (m migrationSessions) Append(ctx context.Context, sessionID string, es ...core.NewEntry) ([]core.Entry, error) {
	return m.s.sess.Append(ctx, sessionID, es...)
}

func (m migrationSessions) Preset(ctx context.Context, h core.BridgeHost, name string) (core.Preset, error) {
	return m.s.sess.Preset(ctx, h, name)
}

func (m migrationSessions) Live(sessionID string) (core.Live, bool) {
	if l := m.s.liveFor(sessionID); l != nil {
		return l.Harness, true
	}
	return nil, false
}

func (m migrationSessions) Hold(sessionID string) (migrate.Turn, bool) {
	l := m.s.liveFor(sessionID)
	if l == nil || !l.Turn.TryLock() {
		return nil, false
	}
	return heldTurn{s: m.s, l: l}, true
}

// heldTurn runs turns in l while its caller holds l.Turn.
type heldTurn struct {
	s *Service
	l *live.Session
}

func (t heldTurn) Run(ctx context.Context, content []core.Content) error {
	_, err := t.s.sess.RunTurn(ctx, t.l, content)
	return err
}

func (t heldTurn) Ask(ctx context.Context, prompt string) (string, error) {
	return t.s.sess.Ask(ctx, t.l, prompt)
}

func (t heldTurn) Release() { t.l.Turn.Unlock() }
