package rpc

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

func TestLifecycle(t *testing.T) {
	fake := newFake()
	var opened InitOptions
	c := startServer(t, fake, func(cfg *Config) {
		cfg.Harnesses = []string{"fake"}
		cfg.Open = func(ctx context.Context, opts InitOptions, n peer.Notifier, cl Caller) (Backend, error) {
			opened = opts
			return fake, nil
		}
	})

	// Before initialize: requests get -32002, notifications are dropped.
	wantError(t, c.Call("session/list", schema.SessionListParams{}), int(CodeNotInitialized))
	wantError(t, c.Call("no/such", nil), int(CodeNotInitialized))
	wantError(t, c.Call("shutdown", nil), int(CodeNotInitialized))
	c.Send(nil, "initialized", schema.InitializedParams{})
	c.Send(nil, "session/whatever", json.RawMessage(`{}`))

	pid := 42
	res := rpctest.Must(c.Client, c.Initialize, schema.InitializeParams{
		ProcessID:  &pid,
		ClientInfo: &schema.ClientInfo{Name: "vsc", Version: "1.2"},
		InitializationOptions: &schema.InitializationOptions{
			DataDir:   "/tmp/bridge-data",
			Harnesses: map[string]json.RawMessage{"fake": json.RawMessage(`{"command":"x"}`)},
		},
	})
	if res.ServerInfo.Name != "bridge" || res.ServerInfo.Version != "test" {
		t.Errorf("serverInfo = %+v", res.ServerInfo)
	}
	for _, m := range schema.Names(schema.ClientToServer, schema.Request) {
		if !slices.Contains(res.Capabilities.Methods, m) {
			t.Errorf("capabilities.methods lacks %s", m)
		}
	}
	if !slices.Contains(res.Capabilities.Notifications, "session/update") || !slices.Equal(res.Capabilities.Harnesses, []string{"fake"}) {
		t.Errorf("capabilities = %+v", res.Capabilities)
	}
	if opened.DataDir != "/tmp/bridge-data" || opened.ProcessID != 42 || opened.ClientName != "vsc" ||
		string(opened.Harnesses["fake"]) != `{"command":"x"}` || len(opened.InitializationOptions) == 0 {
		t.Errorf("InitOptions = %+v", opened)
	}

	e := wantError(t, c.Call("initialize", schema.InitializeParams{}), int(CodeInvalidRequest))
	if want := "initialize: the server is already initialized"; e.Message != want {
		t.Errorf("second initialize: %q, want %q", e.Message, want)
	}
	c.Send(nil, "initialized", schema.InitializedParams{})

	rpctest.Must(c.Client, c.SessionList, schema.SessionListParams{})
	wantError(t, c.Call("no/such", nil), int(CodeMethodNotFound))

	// shutdown is idempotent; the backend is closed once.
	for range 2 {
		m := c.Call("shutdown", nil)
		if m.Error != nil || string(m.Result) != "null" {
			t.Fatalf("shutdown: %+v", m)
		}
	}
	<-fake.closed
	wantError(t, c.Call("session/list", schema.SessionListParams{}), int(CodeInvalidRequest))
	wantError(t, c.Call("no/such", nil), int(CodeInvalidRequest))

	c.Send(nil, "exit", nil)
	if r := c.waitExit(); r.code != 0 || r.err != nil {
		t.Fatalf("exit after shutdown: code %d err %v, want 0 nil", r.code, r.err)
	}
}

func TestExitWithoutShutdown(t *testing.T) {
	fake := newFake()
	c := startServer(t, fake, nil)
	c.initialize()
	c.Send(nil, "exit", nil)
	if r := c.waitExit(); r.code != 1 || r.err != nil {
		t.Fatalf("exit without shutdown: code %d err %v, want 1 nil", r.code, r.err)
	}
	<-fake.closed // the backend is still closed
}

func TestExitBeforeInitialize(t *testing.T) {
	c := startServer(t, newFake(), nil)
	c.Send(nil, "exit", nil)
	if r := c.waitExit(); r.code != 1 {
		t.Fatalf("exit before initialize: code %d, want 1", r.code)
	}
}

func TestEndOfInput(t *testing.T) {
	for _, shutdown := range []bool{false, true} {
		c := startServer(t, newFake(), nil)
		c.initialize()
		want := 1
		if shutdown {
			c.MustCall("shutdown", nil, nil)
			want = 0
		}
		c.w.Close()
		if r := c.waitExit(); r.code != want || r.err != nil {
			t.Errorf("shutdown=%v, input ends: code %d err %v, want %d nil", shutdown, r.code, r.err, want)
		}
	}
}

func TestInitializeFailureAllowsRetry(t *testing.T) {
	fake := newFake()
	tries := 0
	c := startServer(t, fake, func(cfg *Config) {
		cfg.Open = func(ctx context.Context, opts InitOptions, n peer.Notifier, cl Caller) (Backend, error) {
			tries++
			if tries == 1 {
				return nil, core.Errorf(core.CodeInvalid, "data directory %q is not writable", opts.DataDir)
			}
			return fake, nil
		}
	})
	e := wantError(t, c.Call("initialize", schema.InitializeParams{InitializationOptions: &schema.InitializationOptions{DataDir: "/ro"}}), int(CodeInvalidParams))
	if e.Message != `data directory "/ro" is not writable` {
		t.Errorf("message %q", e.Message)
	}
	wantError(t, c.Call("session/list", nil), int(CodeNotInitialized))
	e = wantError(t, c.Call("initialize", json.RawMessage(`{}`)), int(CodeInvalidParams)) // no capabilities: raw
	if d := errData(t, e); d.Field != "capabilities" {
		t.Errorf("missing capabilities: data %+v", d)
	}
	c.initialize()
	c.MustCall("session/list", nil, nil)
}

func TestMethodTableCoversSchema(t *testing.T) {
	got := served()
	want := schema.Names(schema.ClientToServer, schema.Request)
	if !slices.Equal(got, want) {
		t.Errorf("served methods:\n got %v\nwant %v", got, want)
	}
	for _, name := range got {
		m, ok := schema.MethodByName(name)
		if !ok || m.Direction != schema.ClientToServer || m.Kind != schema.Request {
			t.Errorf("%s is not a client request in schema.Methods", name)
		}
	}
	// Every row with a Call is served, and only those.
	for _, m := range schema.Methods() {
		_, ok := methodTable()[m.Name]
		if (m.Call != nil) != ok {
			t.Errorf("%s: Call set %v, served %v", m.Name, m.Call != nil, ok)
		}
	}
}
