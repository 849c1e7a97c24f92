package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"

	"go.lsp.dev/jsonrpc2"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/service"
	"github.com/bridge-dev/bridge/schema"
)

// method is one Bridge request: how to decode its params and call the
// backend. Lifecycle requests are handled by the server itself.
type method struct {
	name string
	// progress is the $/progress title when the method reports work-done
	// progress for a workDoneToken; "" when it does not.
	progress string
	decode   func(raw json.RawMessage) (any, error)
	invoke   func(ctx context.Context, b Backend, params any) (any, error)
}

// route builds a method whose params decode into P.
func route[P any](name, progress string, fn func(ctx context.Context, b Backend, p *P) (any, error)) *method {
	return &method{
		name:     name,
		progress: progress,
		decode:   func(raw json.RawMessage) (any, error) { return decodeParams[P](name, raw) },
		invoke: func(ctx context.Context, b Backend, p any) (any, error) {
			return fn(ctx, b, p.(*P))
		},
	}
}

// methodTable holds every Bridge request the server answers besides the
// lifecycle ones.
var methodTable = map[string]*method{}

func init() {
	for _, m := range []*method{
		route("bridge/doctor", "", doctor),
		route("session/list", "", sessionList),
		route("session/create", "", sessionCreate),
		route("session/prompt", "Prompt", sessionPrompt),
		route("session/cancel", "", sessionCancel),
		route("session/rename", "", sessionRename),
		route("session/archive", "", sessionArchive),
		route("session/history", "", sessionHistory),
		route("session/resume", "", sessionResume),
		route("session/compact", "Compact", sessionCompact),
		route("session/checkpoint", "Checkpoint", sessionCheckpoint),
		route("session/import", "Import", sessionImport),
		route("migration/preview", "Migration preview", migrationPreview),
		route("migration/execute", "Migration", migrationExecute),
	} {
		methodTable[m.name] = m
	}
}

// attachProgress puts a reporter into a request's context; a variable so
// tests can observe the reporter the backend receives.
var attachProgress = service.WithProgress

// lifecycleMethods are the requests the server answers itself.
var lifecycleMethods = []string{"initialize", "shutdown"}

// served lists every request the server answers, sorted.
func served() []string {
	out := append([]string(nil), lifecycleMethods...)
	for name := range methodTable {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// run decodes params, reports progress when asked, calls the backend and
// maps its outcome to the wire.
func (s *server) run(ctx context.Context, m *method, b Backend, raw json.RawMessage) (res any, err error) {
	defer func() {
		// A panicking backend fails its request, not the connection; the
		// stack goes to the log only.
		if r := recover(); r != nil {
			s.log.Error("rpc: handler panicked", "method", m.name, "panic", r, "stack", string(debug.Stack()))
			res, err = nil, toWire(s.log, m.name, fmt.Errorf("panic: %v", r))
		}
	}()
	p, err := m.decode(raw)
	if err != nil {
		return nil, err
	}
	var prog *progress
	if m.progress != "" {
		var wp schema.WorkDoneProgressParams
		if json.Unmarshal(raw, &wp) == nil && wp.WorkDoneToken != nil {
			var untrack func()
			ctx, untrack = s.trackProgress(ctx, *wp.WorkDoneToken)
			defer untrack()
			prog = s.beginProgress(*wp.WorkDoneToken, m.progress)
			ctx = attachProgress(ctx, prog.report)
		}
	}
	res, err = m.invoke(ctx, b, p)
	if prog != nil {
		prog.end(err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, cancelledError(m.name)
		}
		return nil, toWire(s.log, m.name, err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, toWire(s.log, m.name, err)
	}
	return jsonrpc2.RawMessage(out), nil
}

func doctor(ctx context.Context, b Backend, p *schema.DoctorParams) (any, error) {
	r, err := b.Doctor(ctx, p.Harness)
	if err != nil {
		return nil, err
	}
	out := schema.DoctorResult{DataDir: r.DataDir, Database: r.Database, SchemaVersion: r.SchemaVersion}
	for _, a := range r.Adapters {
		ar := schema.AdapterReport{Harness: a.Harness, OK: a.OK, Binary: a.Binary, Version: a.Version, Missing: a.Missing}
		for _, c := range a.Capabilities {
			ar.Capabilities = append(ar.Capabilities, schema.Capability{Name: c.Name, Required: c.Required, Available: c.Available, Detail: c.Detail})
		}
		out.Adapters = append(out.Adapters, ar)
	}
	return out, nil
}

func sessionList(ctx context.Context, b Backend, p *schema.SessionListParams) (any, error) {
	if p.Limit < 0 {
		return nil, invalidParams("limit", "session/list: limit must not be negative")
	}
	items, next, err := b.List(ctx, core.ListQuery{Cursor: p.Cursor, Limit: p.Limit, IncludeArchived: p.IncludeArchived, Harness: p.Harness})
	if err != nil {
		return nil, err
	}
	out := schema.SessionListResult{Items: make([]schema.SessionListItem, 0, len(items)), NextCursor: next}
	for _, x := range items {
		out.Items = append(out.Items, schema.SessionListItem{SessionID: x.ID, Harness: x.Harness, Title: x.Title, Cwd: x.Cwd,
			Archived: x.Archived, UpdatedAt: x.UpdatedAt, CreatedAt: x.CreatedAt, Preset: x.Preset, Model: x.Model,
			NativeSessionID: x.NativeSessionID})
	}
	return out, nil
}

func sessionCreate(ctx context.Context, b Backend, p *schema.SessionCreateParams) (any, error) {
	if p.Harness == "" {
		return nil, invalidParams("harness", "session/create: harness must not be empty")
	}
	sess, err := b.Create(ctx, service.CreateParams{Harness: p.Harness, Cwd: p.Cwd, Preset: p.Preset, Model: p.Model, Effort: p.Effort, Title: p.Title})
	if err != nil {
		return nil, err
	}
	return schema.SessionCreateResult{SessionID: sess.ID, Harness: sess.Harness, NativeSessionID: sess.NativeSessionID}, nil
}

func sessionPrompt(ctx context.Context, b Backend, p *schema.SessionPromptParams) (any, error) {
	if len(p.Content) == 0 {
		return nil, invalidParams("content", "session/prompt: content must hold at least one block")
	}
	content := make([]core.Content, 0, len(p.Content))
	for i, c := range p.Content {
		switch c.Type {
		case schema.ContentText:
		case schema.ContentImage:
			if c.MediaType == "" || c.Data == "" {
				return nil, invalidParams(indexed("content", i, "data"), "session/prompt: an image block needs mediaType and data")
			}
		default:
			return nil, invalidParams(indexed("content", i, "type"), "session/prompt: content type %q is not \"text\" or \"image\"", c.Type)
		}
		content = append(content, core.Content{Type: c.Type, Text: c.Text, MediaType: c.MediaType, Data: c.Data})
	}
	r, err := b.Prompt(ctx, p.SessionID, content)
	if err != nil {
		return nil, err
	}
	return schema.SessionPromptResult{StopReason: r.StopReason}, nil
}

func sessionCancel(ctx context.Context, b Backend, p *schema.SessionCancelParams) (any, error) {
	return schema.SessionCancelResult{}, b.Cancel(ctx, p.SessionID)
}

func sessionRename(ctx context.Context, b Backend, p *schema.SessionRenameParams) (any, error) {
	return schema.SessionRenameResult{}, b.Rename(ctx, p.SessionID, p.Title)
}

func sessionArchive(ctx context.Context, b Backend, p *schema.SessionArchiveParams) (any, error) {
	return schema.SessionArchiveResult{}, b.Archive(ctx, p.SessionID)
}

func sessionHistory(ctx context.Context, b Backend, p *schema.SessionHistoryParams) (any, error) {
	var before int64
	if p.BeforeSeq != nil {
		if *p.BeforeSeq <= 0 {
			return nil, invalidParams("beforeSeq", "session/history: beforeSeq must be positive")
		}
		before = *p.BeforeSeq
	}
	if p.MaxMessages < 0 {
		return nil, invalidParams("maxMessages", "session/history: maxMessages must not be negative")
	}
	entries, more, err := b.History(ctx, p.SessionID, before, p.MaxMessages)
	if err != nil {
		return nil, err
	}
	out := historyResult{Entries: make([]plainEntry, len(entries)), HasMore: more}
	for i, e := range entries {
		out.Entries[i] = plainEntry(wireEntry(e))
	}
	return out, nil
}

// historyResult encodes like schema.SessionHistoryResult (a test keeps the
// two equal) without its MarshalJSON methods, which re-encode and
// re-compact every entry: session/history is the hot read path.
type historyResult struct {
	Entries []plainEntry `json:"entries"`
	HasMore bool         `json:"hasMore"`
}

// plainEntry is schema.Entry without its MarshalJSON method; wireEntry
// already fills an absent payload with {}.
type plainEntry schema.Entry

func sessionResume(ctx context.Context, b Backend, p *schema.SessionResumeParams) (any, error) {
	if p.Mode != "" && p.Mode != schema.ResumeFresh {
		return nil, invalidParams("mode", "session/resume: mode %q is not \"fresh\"", p.Mode)
	}
	r, err := b.Resume(ctx, p.SessionID, p.Mode == schema.ResumeFresh)
	if err != nil {
		return nil, err
	}
	return schema.SessionResumeResult{SessionID: r.SessionID, Mode: schema.RestoreMode(r.Mode), Reason: r.Reason, NativeError: r.NativeError,
		CheckpointEntryID: r.CheckpointEntryID}, nil
}

func sessionCompact(ctx context.Context, b Backend, p *schema.SessionCompactParams) (any, error) {
	r, err := b.Compact(ctx, p.SessionID, p.Focus)
	if err != nil {
		return nil, err
	}
	return schema.SessionCompactResult{By: schema.CompactedBy(r.By), FocusApplied: r.FocusApplied, FocusNote: r.FocusNote,
		EntryID: r.EntryID}, nil
}

func sessionCheckpoint(ctx context.Context, b Backend, p *schema.SessionCheckpointParams) (any, error) {
	if p.Reason != "" && !slices.Contains(schema.CheckpointReasons, p.Reason) {
		return nil, invalidParams("reason", "session/checkpoint: reason %q is not one of %v", p.Reason, schema.CheckpointReasons)
	}
	r, err := b.Checkpoint(ctx, p.SessionID, string(p.Reason))
	if err != nil {
		return nil, err
	}
	return schema.SessionCheckpointResult{EntryID: r.EntryID, Provenance: schema.Provenance(r.Provenance),
		Reason: schema.CheckpointReason(r.Reason)}, nil
}

func sessionImport(ctx context.Context, b Backend, p *schema.SessionImportParams) (any, error) {
	r, err := b.Import(ctx, p.Harness, p.Path)
	if err != nil {
		return nil, err
	}
	return schema.SessionImportResult{SessionID: r.SessionID, Entries: r.Entries, ContextCompacted: r.ContextCompacted}, nil
}

// wireEntry converts a record entry to its wire shape; an absent payload
// becomes {} (payloads are objects).
func wireEntry(e core.Entry) schema.Entry {
	payload := e.Payload
	if len(payload) == 0 {
		payload = emptyObject
	}
	return schema.Entry{ID: e.ID, SessionID: e.SessionID, ParentID: e.ParentID, Seq: e.Seq, Kind: string(e.Kind),
		Payload: payload, NativeID: e.NativeID, TokenEstimate: e.TokenEstimate, CreatedAt: e.CreatedAt}
}

var emptyObject = json.RawMessage(`{}`)

// indexed names element i's member of a list field: "content[2].type".
func indexed(field string, i int, member string) string {
	return field + "[" + strconv.Itoa(i) + "]." + member
}

func migrationPreview(ctx context.Context, b Backend, p *schema.MigrationPreviewParams) (any, error) {
	if p.SummaryCharBudget < 0 {
		return nil, invalidParams("summaryCharBudget", "migration/preview: summaryCharBudget must not be negative")
	}
	if p.Lang != "" && p.Lang != "en" && p.Lang != "zh" {
		return nil, invalidParams("lang", "migration/preview: lang %q is not \"en\" or \"zh\"", p.Lang)
	}
	r, err := b.MigrationPreview(ctx, service.PreviewRequest{SessionID: p.SessionID,
		Target:            service.Target{Harness: p.Target.Harness, Preset: p.Target.Preset, Model: p.Target.Model, Effort: p.Target.Effort},
		SummaryCharBudget: p.SummaryCharBudget, Lang: p.Lang})
	if err != nil {
		return nil, err
	}
	out := schema.MigrationPreviewResult{PreviewID: r.PreviewID, Path: r.Path, Summary: r.Summary, Stats: r.Stats,
		Warnings: r.Warnings, Sections: make([]schema.HandoffSection, 0, len(r.Sections))}
	for _, sec := range r.Sections {
		out.Sections = append(out.Sections, schema.HandoffSection{Title: sec.Title, Body: sec.Body})
	}
	return out, nil
}

func migrationExecute(ctx context.Context, b Backend, p *schema.MigrationExecuteParams) (any, error) {
	switch p.Inject {
	case "", schema.InjectGoal, schema.InjectPrompt, schema.InjectBoth:
	default:
		return nil, invalidParams("inject", "migration/execute: inject %q is not \"goal\", \"prompt\" or \"both\"", p.Inject)
	}
	if p.GoalRounds < 0 {
		return nil, invalidParams("goalRounds", "migration/execute: goalRounds must not be negative")
	}
	r, err := b.MigrationExecute(ctx, service.ExecuteRequest{PreviewID: p.PreviewID, Path: p.Path, Continue: p.Continue,
		Inject: string(p.Inject), GoalRounds: p.GoalRounds})
	if err != nil {
		return nil, err
	}
	return schema.MigrationExecuteResult{TargetSessionID: r.TargetSessionID, ModelTransferred: r.ModelTransferred,
		GoalCreated: r.GoalCreated, GoalPaused: r.GoalPaused, KickoffSent: r.KickoffSent, Warnings: r.Warnings}, nil
}
