package codex

import (
	"context"
	"path"
	"path/filepath"
	"strings"

	"github.com/bridge-dev/bridge/adapters/internal/findfiles"
	"github.com/bridge-dev/bridge/core"
)

var _ core.TranscriptSource = (*Host)(nil)

// codexHome is where Codex keeps its state: Config.CodexHome, else
// CODEX_HOME from Config.Env or the environment, else ~/.codex.
func (h *Host) codexHome() string {
	if h.cfg.CodexHome != "" {
		return h.cfg.CodexHome
	}
	if v := findfiles.Env(h.cfg.Env, "CODEX_HOME"); v != "" {
		return v
	}
	return filepath.Join(findfiles.Home(h.cfg.Env), ".codex")
}

// Transcripts lists Codex's rollout files:
// <codex home>/sessions/YYYY/MM/DD/rollout-*.jsonl and
// <codex home>/archived_sessions/rollout-*.jsonl.
func (h *Host) Transcripts(ctx context.Context) (core.TranscriptList, error) {
	home := h.codexHome()
	rollout := func(rel string) bool {
		b := path.Base(rel)
		return strings.HasPrefix(b, "rollout-") && strings.HasSuffix(b, ".jsonl")
	}
	out := core.TranscriptList{Roots: []string{filepath.Join(home, "sessions"), filepath.Join(home, "archived_sessions")}}
	live, err := findfiles.Under(ctx, out.Roots[0], 4, rollout)
	if err != nil {
		return out, err
	}
	archived, err := findfiles.Under(ctx, out.Roots[1], 1, rollout)
	out.Files = append(live, archived...)
	return out, err
}
