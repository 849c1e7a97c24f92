package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
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
	// CheckpointInstructions are added to every checkpoint request (the
	// language to write in, what to stress).
	CheckpointInstructions string `json:"checkpointInstructions,omitempty"`
	// ApprovalTimeoutSeconds bounds the wait for the client's answer to a
	// session/requestPermission; then the preset's policy answers.
	ApprovalTimeoutSeconds int `json:"approvalTimeoutSeconds,omitempty"`
	// MaxEntryBytes bounds the payload of one recorded entry (default
	// 32 MiB); a larger one is refused with an error naming the limit.
	MaxEntryBytes int `json:"maxEntryBytes,omitempty"`
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
	// Prices is the usage ledger's price table: per model, US dollars per
	// million tokens ({"input", "output", "cacheRead", "cacheWrite"}).
	// Usage a harness reports without a cost is priced from it, marked
	// estimated.
	Prices map[string]core.Price `json:"prices,omitempty"`
	// WorktreesDir is where sessions' own git worktrees are made (default
	// <data dir>/worktrees); an absolute path.
	WorktreesDir string `json:"worktreesDir,omitempty"`
	// Store is where the record lives: "sqlite" (the data directory's
	// database, the default) or a PostgreSQL URL (postgres://USER@HOST/DB);
	// --store and BRIDGE_STORE override it.
	Store string `json:"store,omitempty"`
	// SessionLeaseSeconds is how long a live session's lease lasts unless
	// its process renews it (default 30): after a process dies, another may
	// resume its sessions this long after its last renewal.
	SessionLeaseSeconds float64 `json:"sessionLeaseSeconds,omitempty"`
}

// leaseTTL returns the configured session lease or 0 (the default).
func (c Config) leaseTTL() time.Duration {
	return time.Duration(c.SessionLeaseSeconds * float64(time.Second))
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
	return c.prices(o)
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

// ApprovalTimeout returns the configured approval timeout or the 5 minute
// default.
func (c Config) ApprovalTimeout() time.Duration {
	if c.ApprovalTimeoutSeconds > 0 {
		return time.Duration(c.ApprovalTimeoutSeconds) * time.Second
	}
	return 5 * time.Minute
}

// maxConfigSize bounds a configuration file.
const maxConfigSize = 1 << 20

// UserConfigFile returns the user's configuration file:
// $XDG_CONFIG_HOME/bridge/config.json, else ~/.config/bridge/config.json. A
// relative XDG_CONFIG_HOME is ignored, as the XDG specification asks. It is
// "" when there is no home directory either.
func UserConfigFile() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "bridge", ConfigFile)
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".config", "bridge", ConfigFile)
}

// LoadConfig reads the user's configuration file (UserConfigFile) and then
// dir/config.json, the data directory's overriding the user's: harness by
// harness under "harnesses", preset by name under "presets", and key by key
// otherwise. A missing file contributes nothing; a malformed one is an error
// naming the file, line and column.
func LoadConfig(dir string) (Config, error) {
	var c Config
	for _, path := range []string{UserConfigFile(), filepath.Join(dir, ConfigFile)} {
		if path == "" {
			continue
		}
		one, ok, err := loadConfigFile(path)
		if err != nil {
			return Config{}, err
		}
		if ok {
			c = overlay(c, one)
		}
	}
	return c, nil
}

// loadConfigFile reads and checks one configuration file; ok is false when
// it does not exist.
func loadConfigFile(path string) (c Config, ok bool, err error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, false, nil
	}
	if err != nil {
		return Config{}, false, fmt.Errorf("config: %w", err)
	}
	if !st.Mode().IsRegular() {
		return Config{}, false, fmt.Errorf("config %s: not a regular file", path)
	}
	if st.Size() > maxConfigSize {
		return Config{}, false, fmt.Errorf("config %s: larger than %d bytes", path, maxConfigSize)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, false, fmt.Errorf("config: %w", err)
	}
	if err := decodeStrict(b, &c); err != nil {
		return Config{}, false, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.check(); err != nil {
		return Config{}, false, fmt.Errorf("config %s: %w", path, err)
	}
	return c, true, nil
}

// check rejects names Bridge does not know: a harness section or a preset
// for a harness no adapter serves is a typo, not a setting.
func (c Config) check() error {
	known := harnessNames()
	for name := range c.Harnesses {
		if !slices.Contains(known, name) {
			return fmt.Errorf("harnesses: unknown harness %q (known: %s)", name, strings.Join(known, ", "))
		}
	}
	seen := map[string]bool{}
	for i, p := range c.Presets {
		if p.Name == "" {
			return fmt.Errorf("presets[%d]: a preset needs a name", i)
		}
		if seen[p.Name] {
			return fmt.Errorf("presets: two presets are named %q", p.Name)
		}
		seen[p.Name] = true
		if p.Harness != "" && !slices.Contains(known, p.Harness) {
			return fmt.Errorf("preset %q: unknown harness %q (known: %s)", p.Name, p.Harness, strings.Join(known, ", "))
		}
		if p.Checkpoint != "" && p.Checkpoint != core.CheckpointFork && p.Checkpoint != core.CheckpointInThread {
			return fmt.Errorf("preset %q: checkpoint %q is not %q or %q", p.Name, p.Checkpoint, core.CheckpointFork, core.CheckpointInThread)
		}
	}
	return nil
}

// overlay returns base with over's settings on top: maps entry by entry,
// presets by name, any other field when over sets it.
func overlay(base, over Config) Config {
	out := base
	bv, ov := reflect.ValueOf(&out).Elem(), reflect.ValueOf(over)
	for i := range bv.NumField() {
		f, o := bv.Field(i), ov.Field(i)
		switch {
		case o.IsZero():
		case f.Kind() == reflect.Map:
			m := reflect.MakeMap(f.Type())
			for _, src := range []reflect.Value{f, o} {
				iter := src.MapRange()
				for iter.Next() {
					m.SetMapIndex(iter.Key(), iter.Value())
				}
			}
			f.Set(m)
		case f.Type() == reflect.TypeOf([]core.Preset(nil)):
			presets := slices.Clone(base.Presets)
			for _, p := range over.Presets {
				if j := slices.IndexFunc(presets, func(q core.Preset) bool { return q.Name == p.Name }); j >= 0 {
					presets[j] = p
				} else {
					presets = append(presets, p)
				}
			}
			f.Set(reflect.ValueOf(presets))
		default:
			f.Set(o)
		}
	}
	return out
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

// decodeStrict decodes one JSON value, rejecting unknown fields and
// anything after the value, and turns offsets in errors into line:column
// positions of the offending text.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		end := skipSpace(b, dec.InputOffset())
		if _, terr := dec.Token(); terr != io.EOF {
			line, col := lineCol(b, end)
			return fmt.Errorf("line %d, column %d: unexpected text after the JSON value", line, col)
		}
		return nil
	}
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	hint := ""
	switch {
	case errors.As(err, &se):
		// Offset is just past the offending character.
		off = max(se.Offset-1, 0)
		if strings.Contains(se.Error(), "after object key:value pair") || strings.Contains(se.Error(), "after array element") {
			hint = " (a comma missing before it?)"
		}
	case errors.As(err, &te):
		off = te.Offset
	default:
		var field string
		if _, err := fmt.Sscanf(err.Error(), "json: unknown field %q", &field); err == nil {
			off = keyOffset(b, field)
		}
		if off < 0 {
			off = dec.InputOffset()
		}
	}
	line, col := lineCol(b, off)
	return fmt.Errorf("line %d, column %d: %w%s", line, col, err, hint)
}

// keyOffset is the offset of the first object key named name, or -1.
func keyOffset(b []byte, name string) int64 {
	quoted, _ := json.Marshal(name)
	for from := 0; ; {
		i := bytes.Index(b[from:], quoted)
		if i < 0 {
			return -1
		}
		at := from + i
		rest := bytes.TrimLeft(b[at+len(quoted):], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' {
			return int64(at)
		}
		from = at + len(quoted)
	}
}

// skipSpace returns the offset of the first non-space byte at or after off.
func skipSpace(b []byte, off int64) int64 {
	for off < int64(len(b)) && strings.ContainsRune(" \t\r\n", rune(b[off])) {
		off++
	}
	return off
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
