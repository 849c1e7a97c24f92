package rpc

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// lspCapabilities reads testdata/lsp-3.17-client-capabilities.json: every
// member of LSP 3.17's ClientCapabilities (workspace, textDocument,
// notebookDocument, window, general, experimental) in its standard shape,
// every optional member present, as an editor implementing all of 3.17
// would send it.
func lspCapabilities(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("testdata/lsp-3.17-client-capabilities.json")
	if err != nil {
		t.Fatal(err)
	}
	var caps map[string]any
	if err := json.Unmarshal(b, &caps); err != nil {
		t.Fatal(err)
	}
	return caps
}

// initializeWith starts a server over the fake backend and answers
// initialize with caps; it returns the reply and what Open was given.
func initializeWith(t *testing.T, caps any) (wireMsg, InitOptions) {
	t.Helper()
	fake := newFake()
	var opened InitOptions
	c := startServer(t, fake, func(cfg *Config) {
		cfg.Open = func(ctx context.Context, opts InitOptions, n peer.Notifier, cl Caller) (Backend, error) {
			opened = opts
			return fake, nil
		}
	})
	return c.Call("initialize", map[string]any{"processId": nil, "capabilities": caps}), opened
}

// TestInitializeAcceptsLSPClientCapabilities: editors send LSP 3.17's
// ClientCapabilities as they are. Every standard member in its standard
// shape, experimental as any value (null included) and members nobody
// knows are accepted; Bridge's own session member is still read.
func TestInitializeAcceptsLSPClientCapabilities(t *testing.T) {
	with := func(edit func(map[string]any)) map[string]any {
		c := lspCapabilities(t)
		edit(c)
		return c
	}
	cases := map[string]map[string]any{
		"the full LSP 3.17 set": lspCapabilities(t),
		"experimental null":     with(func(c map[string]any) { c["experimental"] = nil }),
		"experimental a string": with(func(c map[string]any) { c["experimental"] = "on" }),
		"experimental an array": with(func(c map[string]any) { c["experimental"] = []any{1, "x"} }),
		"unknown members": with(func(c map[string]any) {
			c["someFutureMember"] = map[string]any{"x": []any{true}}
			c["window"].(map[string]any)["someFutureWindowFeature"] = 3
			c["general"].(map[string]any)["positionEncodings"] = []any{"utf-16", "utf-64"}
		}),
		"and Bridge's session member": with(func(c map[string]any) {
			c["session"] = map[string]any{"requestPermission": true}
		}),
		"window.showMessage with an empty messageActionItem": map[string]any{
			"window": map[string]any{"showMessage": map[string]any{"messageActionItem": map[string]any{}}},
		},
	}
	for name, caps := range cases {
		t.Run(name, func(t *testing.T) {
			m, opened := initializeWith(t, caps)
			if m.Error != nil {
				t.Fatalf("initialize refused: %d %s", m.Error.Code, m.Error.Message)
			}
			_, session := caps["session"]
			if opened.RequestPermission != session {
				t.Errorf("RequestPermission = %v, want %v", opened.RequestPermission, session)
			}
		})
	}
}

// TestInitializeValidatesBridgesOwnCapabilities: the members Bridge acts on
// are still checked, and the error names the field.
func TestInitializeValidatesBridgesOwnCapabilities(t *testing.T) {
	cases := []struct {
		caps  map[string]any
		field string
	}{
		{map[string]any{"session": map[string]any{"requestPermission": "yes"}}, "capabilities.session.requestPermission"},
		{map[string]any{"session": []any{}}, "capabilities.session"},
		{map[string]any{"window": map[string]any{"workDoneProgress": "yes"}}, "capabilities.window.workDoneProgress"},
		{map[string]any{"window": map[string]any{"showMessage": true}}, "capabilities.window.showMessage"},
		{map[string]any{"textDocument": 1}, "capabilities.textDocument"},
	}
	for _, tc := range cases {
		m, _ := initializeWith(t, tc.caps)
		e := wantError(t, m, int(CodeInvalidParams))
		if d := errData(t, e); d.Field != tc.field {
			t.Errorf("capabilities %v: error field %q (%s), want %q", tc.caps, d.Field, e.Message, tc.field)
		}
	}
}

// TestInitializeResultRepeatsBridgeMembersUnderExperimental: typed LSP
// client libraries keep only the standard server capabilities and
// experimental, so Bridge's own members are there too.
func TestInitializeResultRepeatsBridgeMembersUnderExperimental(t *testing.T) {
	fake := newFake()
	c := startServer(t, fake, func(cfg *Config) { cfg.Harnesses = []string{"fake"} })
	var res schema.InitializeResult
	c.MustCall("initialize", map[string]any{"capabilities": map[string]any{},
		"initializationOptions": map[string]any{"hostsSessions": true, "hostCapabilities": []string{"session.list"}}}, &res)
	caps := res.Capabilities
	var exp struct {
		Methods       []string `json:"methods"`
		Notifications []string `json:"notifications"`
		Harnesses     []string `json:"harnesses"`
		HostMethods   []string `json:"hostMethods"`
	}
	b, _ := json.Marshal(caps.Experimental)
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatalf("experimental %s: %v", b, err)
	}
	if len(caps.Methods) == 0 || !slices.Equal(exp.Methods, caps.Methods) ||
		!slices.Equal(exp.Notifications, caps.Notifications) || !slices.Equal(exp.Harnesses, caps.Harnesses) ||
		!slices.Equal(exp.HostMethods, caps.HostMethods) || len(caps.HostMethods) == 0 {
		t.Errorf("experimental %s does not repeat methods, notifications, harnesses and hostMethods of %+v", b, caps)
	}
	if _, nested := caps.Experimental["experimental"]; nested {
		t.Errorf("experimental repeats itself: %s", b)
	}
}
