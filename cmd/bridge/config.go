package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/service"
)

// ConfigFile is the name of the configuration file in the data directory.
const ConfigFile = "config.json"

// Config is Bridge's configuration: harness commands, presets, timeouts.
// A missing file means defaults; initializationOptions.harnesses overrides
// the harnesses section per harness.
type Config struct {
	// Harnesses configures each adapter by name ("claude-code", "codex",
	// "opencode", "acp", "dsh", "fake").
	Harnesses map[string]HarnessConfig `json:"harnesses,omitempty"`
	// Presets are named tool-and-prompt assemblies.
	Presets []core.Preset `json:"presets,omitempty"`
	// CheckpointTimeoutSeconds bounds the wait for a checkpoint reply.
	CheckpointTimeoutSeconds int `json:"checkpointTimeoutSeconds,omitempty"`
	// SuspendAfterMinutes: a live session idle this long is checkpointed
	// (before_suspend) and its harness process stopped (default 30;
	// fractions allowed; 0 means the default, negative never).
	SuspendAfterMinutes float64 `json:"suspendAfterMinutes,omitempty"`
	// ShutdownCheckpointSeconds bounds, in total, the before_shutdown
	// checkpoints written on shutdown (default 20).
	ShutdownCheckpointSeconds float64 `json:"shutdownCheckpointSeconds,omitempty"`
	// CheckpointOnShutdown: false turns the before_shutdown checkpoints
	// off (default true).
	CheckpointOnShutdown *bool `json:"checkpointOnShutdown,omitempty"`
	// RiskyResumeEntries: a native resume of a session whose last boundary
	// is more than this many entries behind its newest is preceded by a
	// before_native_resume checkpoint (default 200; negative never).
	RiskyResumeEntries int `json:"riskyResumeEntries,omitempty"`
}

// controller returns the checkpoint controller's settings of c.
func (c Config) controller(o *service.Options) error {
	switch {
	case c.SuspendAfterMinutes < 0:
		o.SuspendAfter = -1
	case c.SuspendAfterMinutes > 0:
		o.SuspendAfter = time.Duration(c.SuspendAfterMinutes * float64(time.Minute))
	}
	if c.ShutdownCheckpointSeconds < 0 {
		return fmt.Errorf("config: shutdownCheckpointSeconds %v is negative", c.ShutdownCheckpointSeconds)
	}
	o.ShutdownCheckpoint = time.Duration(c.ShutdownCheckpointSeconds * float64(time.Second))
	o.NoShutdownCheckpoint = c.CheckpointOnShutdown != nil && !*c.CheckpointOnShutdown
	o.RiskyResumeEntries = c.RiskyResumeEntries
	return nil
}

// HarnessConfig says how to start one harness program.
type HarnessConfig struct {
	// Command is the program (default: the harness's usual name on PATH).
	Command string `json:"command,omitempty"`
	// Args are extra arguments.
	Args []string `json:"args,omitempty"`
	// Env adds KEY=VALUE pairs to the environment the program inherits.
	Env map[string]string `json:"env,omitempty"`
	// Disabled leaves the adapter out.
	Disabled bool `json:"disabled,omitempty"`
	// Options are adapter-specific settings, kept as given.
	Options json.RawMessage `json:"options,omitempty"`
}

// EnvList returns Env as KEY=VALUE strings in a stable order.
func (h HarnessConfig) EnvList() []string {
	var out []string
	for k, v := range h.Env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// CheckpointTimeout returns the configured timeout or the 30 s default.
func (c Config) CheckpointTimeout() time.Duration {
	if c.CheckpointTimeoutSeconds > 0 {
		return time.Duration(c.CheckpointTimeoutSeconds) * time.Second
	}
	return 30 * time.Second
}

// LoadConfig reads dir/config.json. A missing file is the default
// configuration; a malformed one is an error naming the line and column.
func LoadConfig(dir string) (Config, error) {
	path := filepath.Join(dir, ConfigFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	var c Config
	if err := decodeStrict(b, &c); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// MergeHarnesses overlays raw (initializationOptions.harnesses) onto c.
func (c *Config) MergeHarnesses(raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	var over map[string]HarnessConfig
	if err := decodeStrict(raw, &over); err != nil {
		return fmt.Errorf("initializationOptions.harnesses: %w", err)
	}
	if c.Harnesses == nil {
		c.Harnesses = map[string]HarnessConfig{}
	}
	for k, v := range over {
		c.Harnesses[k] = v
	}
	return nil
}

// decodeStrict decodes JSON, rejecting unknown fields, and turns offsets in
// errors into line:column positions.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	default:
		off = dec.InputOffset()
	}
	line, col := lineCol(b, off)
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

func lineCol(b []byte, off int64) (int, int) {
	if off < 0 || off > int64(len(b)) {
		off = int64(len(b))
	}
	line, col := 1, 1
	for _, c := range b[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}
