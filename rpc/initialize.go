package rpc

import (
	"context"
	"encoding/json"

	"go.lsp.dev/jsonrpc2"

	"github.com/bridge-dev/bridge/schema"
)

// initialize opens the backend. It runs on the read loop, so no other
// request is served until it answers; a second initialize is refused.
func (s *server) initialize(ctx context.Context, raw json.RawMessage) (any, error) {
	s.mu.Lock()
	if s.state != stateCreated {
		st := s.state
		s.mu.Unlock()
		return nil, jsonrpc2.Errorf(CodeInvalidRequest, "initialize: the server is already %s", st)
	}
	s.state = stateInitializing
	s.mu.Unlock()

	b, out, err := s.open(ctx, raw)
	s.mu.Lock()
	if err != nil {
		s.state = stateCreated // the client may correct itself and try again
		s.mu.Unlock()
		return nil, err
	}
	s.backend, s.state = b, stateInitialized
	s.mu.Unlock()
	return jsonrpc2.RawMessage(out), nil
}

// open decodes the initialize params, writes the result and calls
// Config.Open. The result does not depend on the backend, so it is written
// first: at startup Config.Open mostly waits for the database, which the
// sidecar opens on another goroutine meanwhile.
func (s *server) open(ctx context.Context, raw json.RawMessage) (Backend, []byte, error) {
	opts, err := initOptions(raw)
	if err != nil {
		return nil, nil, err
	}
	caps, err := withExperimental(schema.ServerCapabilities{
		Methods:       served(),
		Notifications: schema.Names(schema.ServerToClient, schema.Notification),
		Harnesses:     s.cfg.Harnesses,
		HostMethods:   hostMethods(opts),
	})
	if err != nil {
		return nil, nil, toWire(s.log, "initialize", err)
	}
	res := schema.InitializeResult{
		ServerInfo:   schema.ServerInfo{Name: schema.ServerName, Version: s.cfg.Version},
		Capabilities: caps,
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, nil, toWire(s.log, "initialize", err)
	}
	b, err := s.cfg.Open(s.life, opts, s, clientCaller{s})
	if err != nil {
		return nil, nil, toWire(s.log, "initialize", err)
	}
	if b == nil {
		return nil, nil, jsonrpc2.NewError(CodeInternal, "initialize: the backend did not open")
	}
	return b, out, nil
}

// withExperimental repeats c's members (none of them LSP server
// capabilities) under experimental: typed LSP client libraries drop the
// server capabilities they do not know, but keep experimental.
func withExperimental(c schema.ServerCapabilities) (schema.ServerCapabilities, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return c, err
	}
	var own map[string]json.RawMessage
	if err := json.Unmarshal(b, &own); err != nil {
		return c, err
	}
	delete(own, "experimental")
	c.Experimental = own
	return c, nil
}

// initOptions decodes the initialize params into what the backend needs.
func initOptions(raw json.RawMessage) (InitOptions, error) {
	p, err := decodeParams[schema.InitializeParams]("initialize", raw)
	if err != nil {
		return InitOptions{}, err
	}
	opts := InitOptions{Locale: p.Locale}
	if sc := p.Capabilities.Session; sc != nil {
		opts.RequestPermission = sc.RequestPermission
	}
	if p.ProcessID != nil {
		opts.ProcessID = *p.ProcessID
	}
	if p.ClientInfo != nil {
		opts.ClientName, opts.ClientVersion = p.ClientInfo.Name, p.ClientInfo.Version
	}
	if io := p.InitializationOptions; io != nil {
		opts.DataDir = io.DataDir
		opts.Harnesses = io.Harnesses
		opts.HostsSessions = io.HostsSessions
		opts.HostHarness = io.HostHarness
		opts.HostCapabilities = io.HostCapabilities
		var whole struct {
			InitializationOptions json.RawMessage `json:"initializationOptions"`
		}
		if json.Unmarshal(raw, &whole) == nil {
			opts.InitializationOptions = whole.InitializationOptions
		}
	}
	return opts, nil
}

// hostMethods lists the host/* requests Bridge may send a hosting client:
// host/probe, and one per advertised capability the contract knows.
func hostMethods(opts InitOptions) []string {
	if !opts.HostsSessions {
		return nil
	}
	out := []string{"host/probe"}
	for _, c := range opts.HostCapabilities {
		if m, ok := schema.MethodByName("host/" + c); ok && m.Capability != "" && m.Name != "host/probe" {
			out = append(out, m.Name)
		}
	}
	return out
}
