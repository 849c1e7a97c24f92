package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/bridge-dev/bridge/adapters/acp"
	"github.com/bridge-dev/bridge/adapters/claudecode"
	"github.com/bridge-dev/bridge/adapters/codex"
	"github.com/bridge-dev/bridge/adapters/dsh"
	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/adapters/opencode"
	"github.com/bridge-dev/bridge/adapters/rpchost"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc"
)

// adapterFactory builds one adapter from its configuration; stateDir is a
// folder of its own under the data directory.
type adapterFactory func(hc HarnessConfig, stateDir string, presets []core.Preset) (core.BridgeHost, error)

// factories are the adapters this binary is built with, sorted by harness
// name. A slice of functions is data the linker lays out: unlike a map,
// nothing is built before main.
var factories = []struct {
	name  string
	build adapterFactory
}{
	{"acp", func(hc HarnessConfig, _ string, presets []core.Preset) (core.BridgeHost, error) {
		var o struct {
			// Cwd is used when a request names no working directory.
			Cwd string `json:"cwd"`
		}
		if err := hc.decodeOptions(&o); err != nil {
			return nil, err
		}
		cmd := hc.Command
		if cmd == "" {
			cmd = "claude-code-acp"
		}
		return acp.New(acp.Config{Name: "acp", Command: cmd, Args: hc.Args, Env: hc.EnvList(), Presets: presets, Cwd: o.Cwd}), nil
	}},
	{"claude-code", func(hc HarnessConfig, _ string, presets []core.Preset) (core.BridgeHost, error) {
		var o struct {
			// ConfigDir is CLAUDE_CONFIG_DIR for the program.
			ConfigDir string `json:"configDir"`
		}
		if err := hc.decodeOptions(&o); err != nil {
			return nil, err
		}
		return claudecode.New(claudecode.Config{Command: hc.Command, Args: hc.Args, Env: hc.EnvList(), Presets: presets, ConfigDir: o.ConfigDir}), nil
	}},
	{"codex", func(hc HarnessConfig, stateDir string, presets []core.Preset) (core.BridgeHost, error) {
		var o struct {
			// CodexHome is CODEX_HOME for the program.
			CodexHome string `json:"codexHome"`
			// SpareIdleSeconds is how long a checkpoint's side process is
			// kept idle for the session's next fork (0: the default,
			// negative: not kept).
			SpareIdleSeconds int `json:"spareIdleSeconds"`
		}
		if err := hc.decodeOptions(&o); err != nil {
			return nil, err
		}
		return codex.New(codex.Config{Command: hc.Command, Args: hc.Args, Env: hc.EnvList(), Presets: presets, CodexHome: o.CodexHome,
			StateDir: stateDir, SpareIdle: time.Duration(o.SpareIdleSeconds) * time.Second}), nil
	}},
	{"dsh", func(hc HarnessConfig, stateDir string, presets []core.Preset) (core.BridgeHost, error) {
		var o struct {
			// URL is DeepSeek Harness's web RPC, e.g. http://127.0.0.1:3181/api.
			URL string `json:"url"`
			// PollMs is how often a running turn is polled.
			PollMs int `json:"pollMs"`
			// Home is the DSH_HOME of the server at URL (default
			// $DSH_HOME, else ~/.dsh): the fork server copies session
			// logs and settings from it, read-only.
			Home string `json:"home"`
			// ForkServer false makes checkpoint forks on the server at
			// URL instead of on a DSH server Bridge starts.
			ForkServer *bool `json:"forkServer"`
			// ForkIdleSeconds is how long an unused fork server is kept
			// (0: the default, negative: until Bridge stops).
			ForkIdleSeconds int `json:"forkIdleSeconds"`
		}
		if err := hc.decodeOptions(&o); err != nil {
			return nil, err
		}
		if o.URL == "" {
			o.URL = os.Getenv("BRIDGE_DSH_URL")
		}
		var fs dsh.ForkServer
		if o.ForkServer == nil || *o.ForkServer {
			cmd := hc.Command
			if cmd == "" {
				cmd = "dsh"
			}
			fs = dsh.ForkServer{Command: cmd, Args: hc.Args, Env: hc.EnvList(), Home: o.Home, StateDir: stateDir,
				IdleStop: time.Duration(o.ForkIdleSeconds) * time.Second}
		}
		return dsh.New(dsh.Config{BaseURL: o.URL, PollInterval: time.Duration(o.PollMs) * time.Millisecond, Presets: presets, ForkServer: fs}), nil
	}},
	{fake.Harness, func(hc HarnessConfig, stateDir string, _ []core.Preset) (core.BridgeHost, error) {
		env := func(k string) string {
			if v, ok := hc.Env[k]; ok {
				return v
			}
			return os.Getenv(k)
		}
		opts, err := fake.OptionsFromEnv(env, stateDir)
		if err != nil {
			return nil, err
		}
		return fake.New(opts), nil
	}},
	{"opencode", func(hc HarnessConfig, stateDir string, presets []core.Preset) (core.BridgeHost, error) {
		var o struct {
			// Home isolates the program's HOME and XDG folders.
			Home string `json:"home"`
			// ConfigJSON is OpenCode's configuration (content or path).
			ConfigJSON string `json:"configJson"`
		}
		if err := hc.decodeOptions(&o); err != nil {
			return nil, err
		}
		return opencode.New(opencode.Config{Command: hc.Command, Args: hc.Args, Env: hc.EnvList(), Presets: presets, Home: o.Home, ConfigJSON: o.ConfigJSON,
			CopyDir: stateDir}), nil
	}},
}

// factory returns the adapter factory of a harness.
func factory(name string) (adapterFactory, bool) {
	for _, f := range factories {
		if f.name == name {
			return f.build, true
		}
	}
	return nil, false
}

// decodeOptions reads the adapter-specific options strictly.
func (h HarnessConfig) decodeOptions(v any) error {
	if len(h.Options) == 0 {
		return nil
	}
	if err := decodeStrict(h.Options, v); err != nil {
		return fmt.Errorf("options: %w", err)
	}
	return nil
}

// harnessNames lists the adapters this binary is built with.
func harnessNames() []string {
	var out []string
	for _, f := range factories {
		out = append(out, f.name)
	}
	sort.Strings(out)
	return out
}

// buildHosts creates every adapter not disabled in cfg.
func buildHosts(cfg Config, dataDir string) ([]core.BridgeHost, error) {
	var hosts []core.BridgeHost
	for _, name := range harnessNames() {
		hc := cfg.Harnesses[name]
		if hc.Disabled {
			continue
		}
		state := filepath.Join(dataDir, "harness", name)
		if err := os.MkdirAll(state, 0o700); err != nil {
			return nil, fmt.Errorf("adapter %s: state folder: %w", name, err)
		}
		presets := core.PresetsFor(cfg.Presets, name)
		build, _ := factory(name)
		h, err := build(hc, state, presets)
		if err != nil {
			return nil, fmt.Errorf("adapter %s: %w", name, err)
		}
		hosts = append(hosts, h)
	}
	for name := range cfg.Harnesses {
		if _, ok := factory(name); !ok {
			return nil, core.Errorf(core.CodeInvalid, "configuration names harness %q, which this build does not have (have: %v)", name, harnessNames())
		}
	}
	return hosts, nil
}

// clientHost returns the adapter that reaches sessions hosted by the client
// itself (host/* requests), when it said so in initialize, or nil. It must
// not call the client here: Open runs on the connection's read loop.
func clientHost(opts rpc.InitOptions, client rpc.Caller, logger *slog.Logger) *rpchost.Host {
	if !opts.HostsSessions {
		return nil
	}
	return rpchost.New(client, opts.HostHarness, opts.HostCapabilities, rpchost.WithLogger(logger))
}
