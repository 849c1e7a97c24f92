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
	root := filepath.Join(defaultHome(), "sessions")
	files, err := findfiles.Under(ctx, root, 3, func(rel string) bool { return path.Base(rel) == "session.jsonl.zstd" })
	return core.TranscriptList{Roots: []string{root}, Files: files}, err
}

// defaultHome is the DSH_HOME of a DSH the user runs: $DSH_HOME, else
// ~/.dsh ("" when there is no home folder).
func defaultHome() string {
	if home := findfiles.Env(nil, "DSH_HOME"); home != "" {
		return home
	}
	if home := findfiles.Home(nil); home != "" {
		return filepath.Join(home, ".dsh")
	}
	return ""
}
