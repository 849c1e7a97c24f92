package claudecode

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/bridge-dev/bridge/adapters/internal/findfiles"
	"github.com/bridge-dev/bridge/core"
)

var _ core.TranscriptSource = (*Host)(nil)

// Transcripts lists Claude Code's session transcripts:
// <config dir>/projects/<cwd slug>/<session id>.jsonl, where the config dir
// is the configured one, else CLAUDE_CONFIG_DIR, else ~/.claude (see
// configDir). Sub-agent transcripts in deeper folders are left out.
func (h *Host) Transcripts(ctx context.Context) (core.TranscriptList, error) {
	root := filepath.Join(h.configDir(), "projects")
	files, err := findfiles.Under(ctx, root, 2, func(rel string) bool {
		return strings.Count(rel, "/") == 1 && strings.HasSuffix(rel, ".jsonl")
	})
	return core.TranscriptList{Roots: []string{root}, Files: files}, err
}
