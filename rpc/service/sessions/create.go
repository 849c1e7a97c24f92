package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// Create starts a new harness session and records it. Nothing is recorded
// when the harness cannot be started.
func (s *Sessions) Create(ctx context.Context, p schema.SessionCreateParams) (core.Session, error) {
	if p.Harness == "" {
		return core.Session{}, core.InvalidField("harness", "harness is required")
	}
	if p.Cwd == "" {
		return core.Session{}, core.InvalidField("cwd", "cwd is required")
	}
	h, err := s.opts.Hosts.Get(p.Harness)
	if err != nil {
		return core.Session{}, err
	}
	if err := s.opts.Hosts.Require(ctx, h, "session/create", core.CapSessionCreate, core.CapSessionPrompt); err != nil {
		return core.Session{}, err
	}
	preset, err := s.Preset(ctx, h, p.Preset)
	if err != nil {
		return core.Session{}, err
	}
	model, effort := p.Model, p.Effort
	if model == "" {
		model = preset.Model
	}
	if effort == "" {
		effort = preset.Effort
	}
	sess := core.Session{ID: s.opts.IDs.New("s_"), Harness: p.Harness, Cwd: p.Cwd, Title: p.Title,
		Preset: preset.Name, Model: model, Effort: effort}
	repo, cwd, err := s.opts.Workspace.Start(ctx, sess.ID, p.Cwd, p.Worktree || preset.Worktree) // rpc/service/workspace
	if err != nil {
		return core.Session{}, err
	}
	sess.Cwd = cwd
	l, err := s.StartLive(ctx, h, sess, preset, "", false)
	if err != nil {
		s.opts.Workspace.Drop(ctx, repo)
		return core.Session{}, err
	}
	sess.NativeSessionID = l.Harness.NativeID()
	stored, err := s.opts.Store.CreateSession(ctx, sess)
	if err != nil {
		_ = l.Close(ctx)
		s.opts.Workspace.Drop(ctx, repo)
		return core.Session{}, fmt.Errorf("record session: %w", err)
	}
	if repo.Repo != "" {
		if err := s.opts.Workspace.Save(ctx, repo); err != nil {
			s.opts.Notifier.Log(2, fmt.Sprintf("session %s: recording its repository: %v", sess.ID, err))
		}
	}
	l.MarkRecorded()
	return s.opts.Store.GetSession(ctx, stored.ID)
}

// Preset resolves a preset name for a host: the configuration file first,
// then the host's own list. "" means the host's default.
func (s *Sessions) Preset(ctx context.Context, h core.BridgeHost, name string) (core.Preset, error) {
	if name == "" {
		return core.Preset{Harness: h.Harness()}, nil
	}
	configured := core.PresetsFor(s.opts.Presets, h.Harness())
	for _, p := range configured {
		if p.Name == name {
			return p, nil
		}
	}
	ps, err := h.Presets(ctx)
	if err != nil && !errors.Is(err, core.ErrUnsupported) {
		return core.Preset{}, fmt.Errorf("list presets of %s: %w", h.Harness(), err)
	}
	var names []string
	for _, p := range ps {
		if p.Name == name {
			p.Harness = h.Harness()
			return p, nil
		}
		names = append(names, p.Name)
	}
	for _, p := range configured {
		names = append(names, p.Name)
	}
	return core.Preset{}, core.Errorf(core.CodeNotFound, "preset %q not found for harness %s (have: %s)", name, h.Harness(), strings.Join(names, ", "))
}
