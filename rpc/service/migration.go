package service

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/migrate"
	"github.com/bridge-dev/bridge/rpc/service/sessions"
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

// migrationSessions lends the session flows to a migration
// (migrate.Sessions): create, archive, rename, append and presets as they
// are; a live session as its harness; a held turn as a migrate.Turn.
type migrationSessions struct{ *sessions.Sessions }

func (m migrationSessions) Live(sessionID string) (core.Live, bool) {
	if l := m.Sessions.Live(sessionID); l != nil {
		return l.Harness, true
	}
	return nil, false
}

func (m migrationSessions) Hold(sessionID string) (migrate.Turn, bool) {
	return m.Sessions.Hold(sessionID)
}
