// Package rpchost is the adapter for a client that hosts sessions itself
// (ARCHITECTURE.md, The client contract): the editor or WebUI server that launched Bridge implements the
// BridgeHost port on its side, and Bridge drives it by sending requests named
// host/<capability> back over the same JSON-RPC connection. The client pushes
// each live session's events with the host/event notification, which the rpc
// server hands to Host.HostEvent.
//
// Ordering. The contract says a client sends a turn's host/event
// notifications before it replies to host/session.prompt. Notifications and
// replies travel on one ordered stream and the connection's read loop handles
// them in wire order. HostEvent, called synchronously by that read loop (as
// rpc.EventReceiver is), queues each event on its session; Prompt, once the
// reply has been read, waits for that queue to drain. So every event of a
// turn has reached the session's sink before Prompt returns. The sink itself
// runs on a goroutine of the session's, never on the read loop: a sink may
// call the client back (the service probes the host when a context gauge
// arrives), and a call made on the read loop could never read its reply.
//
// Errors. A capability the client did not advertise, or that its last
// host/probe reported missing, is refused before anything is sent, with an
// error wrapping core.ErrUnsupported (code unsupported). An error reply from
// the client is a core error with code harness and the client's message; an
// unknown method (-32601) is code unavailable and also wraps
// core.ErrUnsupported; a dead connection is unavailable; a cancelled caller
// is cancelled (the rpc Caller then sends $/cancelRequest).
//
// Wiring (cmd/bridge): when rpc.InitOptions.HostsSessions is true, build
// rpchost.New(client, opts.HostHarness, opts.HostCapabilities), add it to the
// service's hosts, and have the backend forward HostEvent to it.
package rpchost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// Caller calls the hosting client back. It has the method set of rpc.Caller:
// Call sends a request and waits for its result, decoding it into result
// (which may be nil); an error reply from the client is returned as (or
// wrapping) a *jsonrpc2.Error; when ctx ends first the call is abandoned
// (the rpc implementation sends $/cancelRequest).
type Caller interface {
	Call(ctx context.Context, method string, params, result any) error
}

// DefaultHarness is the harness name used when the client gives none.
const DefaultHarness = "rpchost"

// DefaultProbeTimeout bounds host/probe.
const DefaultProbeTimeout = 5 * time.Second

// maxOrphans bounds the events kept for a session whose host/session.create
// reply has not arrived yet.
const maxOrphans = 1024

// Option configures a Host.
type Option func(*Host)

// WithLogger sets the logger for dropped or malformed events (default: a
// logger that discards everything).
func WithLogger(l *slog.Logger) Option {
	return func(h *Host) {
		if l != nil {
			h.log = l
		}
	}
}

// WithProbeTimeout bounds the host/probe call (default DefaultProbeTimeout).
func WithProbeTimeout(d time.Duration) Option {
	return func(h *Host) {
		if d > 0 {
			h.probeTimeout = d
		}
	}
}

// Host is a core.BridgeHost whose sessions live in the client. It also
// implements core.NativeResumer and core.AttachmentSource; both refuse with
// core.ErrUnsupported unless the client advertised the capability.
type Host struct {
	c            Caller
	harness      string
	advertised   map[string]bool
	log          *slog.Logger
	probeTimeout time.Duration

	mu       sync.Mutex
	lives    map[string]*live // by the client's nativeId
	creating int              // host/session.create calls in flight
	orphans  []orphan         // events for ids not yet known while creating
	reported map[string]bool  // the client's last successful host/probe answer
}

type orphan struct {
	nativeID string
	n        schema.HostEventNotification
}

var (
	_ core.BridgeHost       = (*Host)(nil)
	_ core.NativeResumer    = (*Host)(nil)
	_ core.AttachmentSource = (*Host)(nil)
)

// New returns the host for a client that advertised capabilities (doctor's
// spelling, as initializationOptions.hostCapabilities lists them) and calls
// itself harness ("" means DefaultHarness). Bridge sends host/<capability>
// only for advertised capabilities.
func New(c Caller, harness string, capabilities []string, opts ...Option) *Host {
	if harness == "" {
		harness = DefaultHarness
	}
	h := &Host{c: c, harness: harness, advertised: map[string]bool{},
		log: slog.New(slog.DiscardHandler), probeTimeout: DefaultProbeTimeout,
		lives: map[string]*live{}}
	for _, name := range capabilities {
		h.advertised[name] = true
	}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Harness names the client's harness.
func (h *Host) Harness() string { return h.harness }

// ClientHosted is true: the client hosts these sessions, and relays their
// permission requests as hosted/requestPermission.
func (h *Host) ClientHosted() bool { return true }

// Probe asks the client (host/probe, bounded by the probe timeout) and
// reports a capability available only when the client both advertised it in
// initialize and reports it available now. A failing probe call counts
// everything as missing, with the failure as detail.
func (h *Host) Probe(ctx context.Context) core.Probe {
	p := core.Probe{Harness: h.harness}
	var res schema.HostProbeResult
	err := h.probeCall(ctx, &res)
	reported := map[string]schema.Capability{}
	if err == nil {
		p.Binary, p.Version = res.Binary, res.Version
		for _, c := range res.Capabilities {
			reported[c.Name] = c
		}
		avail := map[string]bool{}
		for name, c := range reported {
			avail[name] = c.Available
		}
		h.mu.Lock()
		h.reported = avail
		h.mu.Unlock()
	}
	add := func(name string) {
		c := core.Capability{Name: name}
		rc, listed := reported[name]
		switch {
		case !h.advertised[name]:
			c.Detail = "the client did not advertise it in initialize (initializationOptions.hostCapabilities)"
		case err != nil:
			c.Detail = "host/probe failed: " + err.Error()
		case name == core.CapSessionFork:
			c.Detail = "host-over-RPC has no fork request; Bridge cannot fork a hosted session"
		case !listed:
			c.Detail = "the client's host/probe does not list it"
		case !rc.Available:
			c.Detail = "the client's host/probe reports it unavailable"
			if rc.Detail != "" {
				c.Detail += ": " + rc.Detail
			}
		default:
			c.Available = true
			c.Detail = rc.Detail
		}
		p.Capabilities = append(p.Capabilities, c)
	}
	for _, n := range core.Capabilities {
		add(n)
	}
	return p
}

// probeCall runs host/probe, turning a panic of the Caller into an error.
func (h *Host) probeCall(ctx context.Context, res *schema.HostProbeResult) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("host/probe panicked: %v", r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("not asked: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, h.probeTimeout)
	defer cancel()
	return h.c.Call(ctx, "host/probe", schema.HostProbeParams{}, res)
}

// gate refuses capability name, with an error wrapping core.ErrUnsupported,
// when the client did not advertise it or its last probe said it is missing.
func (h *Host) gate(name string) error {
	if !h.advertised[name] {
		return core.E(core.CodeUnsupported,
			fmt.Sprintf("%s: the hosting client (%s) did not advertise %s", name, h.harness, name), core.ErrUnsupported)
	}
	h.mu.Lock()
	avail, probed := h.reported[name]
	known := h.reported != nil
	h.mu.Unlock()
	if known && (!probed || !avail) {
		return core.E(core.CodeUnsupported,
			fmt.Sprintf("%s: the hosting client (%s) reports %s unavailable", name, h.harness, name), core.ErrUnsupported)
	}
	return nil
}

// call sends host/<capability> after checking the capability, and maps the
// client's errors.
func (h *Host) call(ctx context.Context, capability string, params, result any) error {
	if err := h.gate(capability); err != nil {
		return err
	}
	return h.rawCall(ctx, "host/"+capability, params, result)
}

// rawCall sends method without a capability check and maps errors.
func (h *Host) rawCall(ctx context.Context, method string, params, result any) error {
	if err := ctx.Err(); err != nil {
		return core.E(core.CodeCancelled, method+": not sent, the caller gave up", errors.Join(core.ErrCancelled, err))
	}
	if err := h.c.Call(ctx, method, params, result); err != nil {
		return h.mapErr(ctx, method, err)
	}
	return nil
}

// mapErr turns a Caller error into a clear domain error: an unknown method
// (-32601) is unavailable (and wraps core.ErrUnsupported), any other error
// reply is a harness failure carrying the client's message, a cancelled
// caller is cancelled, and a dead connection is unavailable.
func (h *Host) mapErr(ctx context.Context, method string, err error) error {
	var we *jsonrpc2.Error
	if errors.As(err, &we) {
		switch we.Code {
		case jsonrpc2.MethodNotFound:
			return core.E(core.CodeUnavailable,
				fmt.Sprintf("%s: the hosting client (%s) does not implement it: %s", method, h.harness, we.Message),
				errors.Join(core.ErrUnsupported, err))
		case jsonrpc2.Code(-32800):
			return core.E(core.CodeCancelled, fmt.Sprintf("%s: the hosting client cancelled: %s", method, we.Message),
				errors.Join(core.ErrCancelled, err))
		}
		return core.E(core.CodeHarness, fmt.Sprintf("%s: %s", method, we.Message), err)
	}
	var ce *core.Error
	if errors.As(err, &ce) {
		return err
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		code := core.CodeCancelled
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			code = core.CodeTimeout
		}
		return core.E(code, method+": no reply from the hosting client", errors.Join(core.ErrCancelled, err))
	}
	return core.E(core.CodeUnavailable, fmt.Sprintf("%s: the hosting client (%s) is unreachable", method, h.harness), err)
}

// clientMessage returns the client's own error text, when err is an error
// reply.
func clientMessage(err error) (string, bool) {
	var we *jsonrpc2.Error
	if errors.As(err, &we) {
		return we.Message, true
	}
	return "", false
}

// ListSessions calls host/session.list.
func (h *Host) ListSessions(ctx context.Context, cwd string) ([]core.HostSession, error) {
	var res schema.HostSessionListResult
	if err := h.call(ctx, core.CapSessionList, schema.HostSessionListParams{Cwd: cwd}, &res); err != nil {
		return nil, err
	}
	return res.Sessions, nil
}

// CreateSession calls host/session.create. Events the client sends for the
// new session before its reply arrives are kept and delivered first.
func (h *Host) CreateSession(ctx context.Context, req core.CreateRequest, sink core.EventSink) (core.Live, error) {
	if err := h.gate(core.CapSessionCreate); err != nil {
		return nil, err
	}
	if sink == nil {
		sink = func(core.Event) {}
	}
	h.mu.Lock()
	h.creating++
	h.mu.Unlock()
	var res schema.HostSessionCreateResult
	err := h.rawCall(ctx, "host/"+core.CapSessionCreate, schema.HostSessionCreateParams{Cwd: req.Cwd,
		Preset: wirePreset(req.Preset), Model: req.Model, Effort: req.Effort, Title: req.Title}, &res)
	if err == nil && res.NativeID == "" {
		err = core.Errorf(core.CodeHarness, "host/session.create: the hosting client answered no nativeId")
	}
	if err != nil {
		h.mu.Lock()
		h.creating--
		h.dropOrphansLocked()
		h.mu.Unlock()
		return nil, err
	}
	l := newLive(h, res.NativeID, sink)
	h.register(l)
	if err := l.flush(ctx); err != nil {
		_ = l.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return l, nil
}

// Resume calls host/native.resume. The client proves the resume by
// answering the requested nativeId; any other answer, or an error reply, is
// a *core.ResumeError (carrying the client's own text) and no Live.
func (h *Host) Resume(ctx context.Context, req core.ResumeRequest, sink core.EventSink) (core.Live, error) {
	if err := h.gate(core.CapNativeResume); err != nil {
		return nil, err
	}
	if req.NativeID == "" {
		return nil, core.Errorf(core.CodeInvalid, "native resume needs a nativeId")
	}
	if sink == nil {
		sink = func(core.Event) {}
	}
	// Register first: events the client sends while resuming reach the sink.
	if err := ctx.Err(); err != nil {
		return nil, core.E(core.CodeCancelled, "host/native.resume: not sent, the caller gave up", errors.Join(core.ErrCancelled, err))
	}
	l := newLive(h, req.NativeID, sink)
	if !h.claim(l) {
		return nil, core.Errorf(core.CodeBusy, "session %s is already live on the hosting client", req.NativeID)
	}
	var res schema.HostSessionResumeResult
	err := h.c.Call(ctx, "host/"+core.CapNativeResume, schema.HostSessionResumeParams{NativeID: req.NativeID,
		Cwd: req.Cwd, Preset: wirePreset(req.Preset), Model: req.Model, Effort: req.Effort}, &res)
	if err != nil {
		h.unregister(l)
		mapped := h.mapErr(ctx, "host/native.resume", err)
		if msg, ok := clientMessage(err); ok {
			return nil, &core.ResumeError{NativeText: msg, Err: mapped}
		}
		return nil, mapped
	}
	if res.NativeID != req.NativeID {
		h.unregister(l)
		if res.NativeID != "" {
			// Do not leave the session the client did open running.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			_ = h.c.Call(cctx, "host/session.close", schema.HostSessionParams{NativeID: res.NativeID}, nil)
			cancel()
		}
		text := fmt.Sprintf("the hosting client resumed %q instead of %q", res.NativeID, req.NativeID)
		return nil, &core.ResumeError{NativeText: text,
			Err: core.Errorf(core.CodeHarness, "host/native.resume: %s", text)}
	}
	if err := l.flush(ctx); err != nil {
		_ = l.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return l, nil
}

// History calls host/session.history. Entries that do not validate are kept
// as harness.event entries carrying the client's payload.
func (h *Host) History(ctx context.Context, nativeID string) ([]core.NewEntry, error) {
	var res schema.HostSessionHistoryResult
	if err := h.call(ctx, core.CapSessionHistory, schema.HostSessionHistoryParams{NativeID: nativeID}, &res); err != nil {
		return nil, err
	}
	out := make([]core.NewEntry, 0, len(res.Entries))
	for _, e := range res.Entries {
		out = append(out, h.entry(nativeID, e))
	}
	return out, nil
}

// Models calls host/session.models.
func (h *Host) Models(ctx context.Context) ([]core.Model, error) {
	var res schema.HostSessionModelsResult
	if err := h.call(ctx, core.CapSessionModels, schema.HostSessionModelsParams{}, &res); err != nil {
		return nil, err
	}
	out := make([]core.Model, 0, len(res.Models))
	for _, m := range res.Models {
		out = append(out, core.Model{ID: m.ID, Name: m.Name, Efforts: m.Efforts, Vision: m.Vision, ContextWindow: m.ContextWindow})
	}
	return out, nil
}

// Workspaces calls host/workspace.list.
func (h *Host) Workspaces(ctx context.Context) ([]core.Workspace, error) {
	var res schema.HostWorkspaceListResult
	if err := h.call(ctx, core.CapWorkspaceList, schema.HostWorkspaceListParams{}, &res); err != nil {
		return nil, err
	}
	out := make([]core.Workspace, 0, len(res.Workspaces))
	for _, w := range res.Workspaces {
		out = append(out, core.Workspace{Path: w.Path, Name: w.Name})
	}
	return out, nil
}

// ArchiveSession calls host/workspace.archiveSession.
func (h *Host) ArchiveSession(ctx context.Context, nativeID string) error {
	return h.call(ctx, core.CapWorkspaceArchive, schema.HostSessionParams{NativeID: nativeID}, nil)
}

// Presets calls host/agentPreset.list. A preset naming no harness is this
// host's.
func (h *Host) Presets(ctx context.Context) ([]core.Preset, error) {
	var res schema.HostPresetListResult
	if err := h.call(ctx, core.CapPresetList, schema.HostPresetListParams{}, &res); err != nil {
		return nil, err
	}
	out := make([]core.Preset, 0, len(res.Presets))
	for _, p := range res.Presets {
		cp := core.Preset{Name: p.Name, Harness: p.Harness, Description: p.Description, Model: p.Model,
			Effort: p.Effort, AllowedTools: p.AllowedTools, DisallowedTools: p.DisallowedTools,
			PermissionMode: p.PermissionMode, AppendSystemPrompt: p.AppendSystemPrompt, Profile: p.Profile,
			ApprovalPolicy: p.ApprovalPolicy, Agent: p.Agent}
		if cp.Harness == "" {
			cp.Harness = h.harness
		}
		out = append(out, cp)
	}
	return out, nil
}

// Attachment calls host/session.attachment.
func (h *Host) Attachment(ctx context.Context, nativeID, ref string) (core.Content, error) {
	var res schema.HostAttachmentResult
	if err := h.call(ctx, core.CapAttachment, schema.HostAttachmentParams{NativeID: nativeID, Ref: ref}, &res); err != nil {
		return core.Content{}, err
	}
	c := res.Content
	if c.Type == "" {
		return core.Content{}, core.Errorf(core.CodeHarness, "host/session.attachment: the hosting client answered an empty content block")
	}
	return core.Content{Type: c.Type, Text: c.Text, MediaType: c.MediaType, Data: c.Data}, nil
}

// wirePreset converts a preset for the wire; the zero preset is omitted.
func wirePreset(p core.Preset) *schema.Preset {
	if p.Name == "" && p.Model == "" && p.Agent == "" && p.Profile == "" && len(p.AllowedTools) == 0 &&
		p.AppendSystemPrompt == "" && p.PermissionMode == "" {
		return nil
	}
	return &schema.Preset{Name: p.Name, Harness: p.Harness, Description: p.Description, Model: p.Model,
		Effort: p.Effort, AllowedTools: p.AllowedTools, DisallowedTools: p.DisallowedTools,
		PermissionMode: p.PermissionMode, AppendSystemPrompt: p.AppendSystemPrompt, Profile: p.Profile,
		ApprovalPolicy: p.ApprovalPolicy, Agent: p.Agent}
}
