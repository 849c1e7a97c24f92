package dsh

import (
	"context"
	"path"
	"path/filepath"

	"github.com/bridge-dev/bridge/adapters/internal/findfiles"
	"github.com/bridge-dev/bridge/core"
)

var _ core.TranscriptSource = (*Host)(nil)

// Transcripts lists DeepSeek Harness's session logs:
// $DSH_HOME/sessions/--<cwd>--/<session>/session.jsonl.zstd, DSH_HOME
// defaulting to ~/.dsh.
func (h *Host) Transcripts(ctx context.Context) (core.TranscriptList, error) {
	home := findfiles.Env(nil, "DSH_HOME")
	if home == "" {
		home = filepath.Join(findfiles.Home(nil), ".dsh")
	}
	root := filepath.Join(home, "sessions")
	files, err := findfiles.Under(ctx, root, 3, func(rel string) bool { return path.Base(rel) == "session.jsonl.zstd" })
	return core.TranscriptList{Roots: []string{root}, Files: files}, err
}
