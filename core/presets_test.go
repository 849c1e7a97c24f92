package core_test

import (
	"testing"

	"github.com/bridge-dev/bridge/core"
)

// TestPresetsFor: a preset applies to the harness it names, or to every
// harness when it names none; the copies name the harness.
func TestPresetsFor(t *testing.T) {
	ps := []core.Preset{{Name: "any"}, {Name: "codex-only", Harness: "codex"}, {Name: "claude-only", Harness: "claude-code"}}
	got := core.PresetsFor(ps, "codex")
	if len(got) != 2 || got[0].Name != "any" || got[1].Name != "codex-only" || got[0].Harness != "codex" || got[1].Harness != "codex" {
		t.Fatalf("PresetsFor(codex) = %+v", got)
	}
	if ps[0].Harness != "" {
		t.Fatal("PresetsFor changed its input")
	}
	if got := core.PresetsFor(ps, "opencode"); len(got) != 1 || got[0].Name != "any" {
		t.Fatalf("PresetsFor(opencode) = %+v", got)
	}
}

// TestCheckpointMethodFor: a fork where the harness can fork; otherwise
// reconstructed, and the live thread only where the preset asks for it.
func TestCheckpointMethodFor(t *testing.T) {
	cases := []struct {
		preset  core.CheckpointMethod
		canFork bool
		want    core.CheckpointMethod
	}{
		{"", true, core.CheckpointFork},
		{"", false, core.CheckpointReconstructed},
		{core.CheckpointFork, true, core.CheckpointFork},
		{core.CheckpointFork, false, core.CheckpointReconstructed},
		{core.CheckpointInThread, false, core.CheckpointInThread},
		{core.CheckpointInThread, true, core.CheckpointInThread},
	}
	for _, c := range cases {
		if got := core.CheckpointMethodFor(core.Preset{Checkpoint: c.preset}, c.canFork); got != c.want {
			t.Errorf("checkpoint %q, canFork %v: %q, want %q", c.preset, c.canFork, got, c.want)
		}
	}
}
