package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigErrorPositions: each mistake in config.json is reported on the
// line (and column) where it is, and trailing text or an unknown harness is
// an error, not ignored.
func TestConfigErrorPositions(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, c := range []struct {
		name, text, want string
	}{
		{"unknown field", "{\n  \"harnesses\": {\n    \"codex\": {\n      \"comand\": \"x\"\n    }\n  }\n}\n", `line 4, column 7: json: unknown field "comand"`},
		{"unknown top-level field", "{\n  \"presets\": [],\n  \"checkpointTimeout\": 3\n}\n", "line 3, column 3"},
		{"trailing comma", "{\n  \"presets\": [\n    {\"name\": \"x\",}\n  ]\n}\n", "line 3, column 18"},
		{"missing comma", "{\n  \"presets\": []\n  \"checkpointTimeoutSeconds\": 3\n}\n", "line 3, column 3"},
		{"wrong type", "{\n  \"checkpointTimeoutSeconds\": \"30\"\n}\n", "line 2"},
		{"trailing garbage", "{\"presets\": []}\n}\n", "line 2, column 1: unexpected text after the JSON value"},
		{"second object", "{}\n{}\n", "line 2, column 1"},
		{"unknown preset harness", `{"presets": [{"name": "r", "harness": "claud-code"}]}`, `preset "r": unknown harness "claud-code"`},
		{"unknown harness section", `{"harnesses": {"opencod": {}}}`, `unknown harness "opencod"`},
		{"duplicate preset", `{"presets": [{"name": "r"}, {"name": "r"}]}`, `two presets are named "r"`},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, ConfigFile)
		if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming %s and %q", c.name, err, path, c.want)
		}
	}
}

// TestUserConfig: $XDG_CONFIG_HOME/bridge/config.json (else
// ~/.config/bridge/config.json) is read first, and the data directory's
// config.json overrides it harness by harness, preset by name and key by
// key. A relative XDG_CONFIG_HOME is ignored.
func TestUserConfig(t *testing.T) {
	home, xdg, data := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(xdg, "bridge", ConfigFile), `{
  "harnesses": {"codex": {"command": "/user/codex"}, "opencode": {"command": "/user/opencode"}},
  "presets": [{"name": "reviewer", "harness": "claude-code", "model": "user"}, {"name": "mine", "harness": "codex"}],
  "checkpointTimeoutSeconds": 11
}`)
	write(filepath.Join(home, ".config", "bridge", ConfigFile), `{"checkpointTimeoutSeconds": 22}`)
	write(filepath.Join(data, ConfigFile), `{
  "harnesses": {"codex": {"command": "/data/codex"}},
  "presets": [{"name": "reviewer", "harness": "claude-code", "model": "data"}]
}`)

	t.Setenv("XDG_CONFIG_HOME", xdg)
	c, err := LoadConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if c.Harnesses["codex"].Command != "/data/codex" || c.Harnesses["opencode"].Command != "/user/opencode" {
		t.Errorf("harnesses = %+v", c.Harnesses)
	}
	if len(c.Presets) != 2 || c.Presets[0].Name != "reviewer" || c.Presets[0].Model != "data" || c.Presets[1].Name != "mine" {
		t.Errorf("presets = %+v", c.Presets)
	}
	if c.CheckpointTimeoutSeconds != 11 {
		t.Errorf("checkpointTimeoutSeconds = %d, want the user's 11 (the data directory sets none)", c.CheckpointTimeoutSeconds)
	}

	// Without XDG_CONFIG_HOME, or with a relative one: ~/.config/bridge.
	for _, x := range []string{"", "relative/config"} {
		t.Setenv("XDG_CONFIG_HOME", x)
		c, err = LoadConfig(data)
		if err != nil || c.CheckpointTimeoutSeconds != 22 || c.Harnesses["opencode"].Command != "" {
			t.Errorf("XDG_CONFIG_HOME=%q: %+v %v, want ~/.config/bridge/config.json", x, c, err)
		}
	}

	// A mistake in the user's file names that file.
	t.Setenv("XDG_CONFIG_HOME", xdg)
	write(filepath.Join(xdg, "bridge", ConfigFile), "{\n  \"presets\": [{\"name\": \"x\", \"harness\": \"nope\"}]\n}\n")
	if _, err := LoadConfig(data); err == nil || !strings.Contains(err.Error(), filepath.Join(xdg, "bridge", ConfigFile)) {
		t.Errorf("bad user config: %v", err)
	}
}
