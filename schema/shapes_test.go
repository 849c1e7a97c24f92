package schema_test

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// shapes lists, per contract type, its wire members: before "|" the ones
// the contract started with, after it the ones added since (ARCHITECTURE.md,
// The client contract: added freely, never renamed); "?" marks an optional
// member. A renamed or dropped member, or a new one not listed here, fails
// TestShapes.
var shapes = map[string]string{
	// The first shapes, with additions after "|".
	"InitializeParams":             "processId? clientInfo? capabilities initializationOptions? | locale?",
	"InitializationOptions":        "dataDir? harnesses? | hostsSessions? hostHarness? hostCapabilities?",
	"InitializeResult":             "serverInfo capabilities",
	"ServerInfo":                   "name version",
	"SessionCreateParams":          "harness cwd preset? model? title? | effort? worktree?",
	"SessionCreateResult":          "sessionId harness nativeSessionId? | repo?",
	"SessionPromptParams":          "sessionId content | workDoneToken? steer? promptId?",
	"SessionPromptResult":          "stopReason | promptId? queued?",
	"SessionHistoryParams":         "sessionId beforeSeq? maxMessages? | afterSeq? around?",
	"SessionHistoryResult":         "entries hasMore | hasNewer?",
	"Entry":                        "id sessionId parentId? seq kind payload createdAt | nativeId? tokenEstimate?",
	"SessionListParams":            "cursor? | limit? harness? includeArchived?",
	"SessionListResult":            "items nextCursor?",
	"SessionListItem":              "sessionId harness title? cwd? archived updatedAt | createdAt? preset? model? nativeSessionId? restoreMode? status branch? worktree?",
	"SessionResumeParams":          "sessionId mode?",
	"SessionResumeResult":          "mode reason? nativeError? checkpointEntryId? | sessionId?",
	"SessionCompactParams":         "sessionId focus? | workDoneToken?",
	"SessionCompactResult":         "by focusApplied focusNote? entryId?",
	"SessionCheckpointParams":      "sessionId reason? | workDoneToken?",
	"SessionCheckpointResult":      "entryId provenance reason method forkUsage?",
	"TokenUsage":                   "inputTokens outputTokens cacheReadTokens? cacheCreationTokens?",
	"SessionSuspendParams":         "sessionId",
	"SessionSuspendResult":         "suspended checkpointEntryId? suppressed?",
	"SessionImportParams":          "harness? path? | workDoneToken? discover?",
	"SessionImportResult":          "sessionId entries contextCompacted | discovered?",
	"DoctorParams":                 "harness?",
	"DoctorResult":                 "adapters dataDir schemaVersion | database?",
	"AdapterReport":                "harness ok binary? version? capabilities missing | installed presets?",
	"Capability":                   "name required available detail? | need reason",
	"MigrationPreviewParams":       "sessionId? target summaryCharBudget? lang? | source? workDoneToken?",
	"MigrationSource":              "harness nativeSessionId",
	"MigrationTarget":              "harness? preset? model? | effort?",
	"MigrationPreviewResult":       "previewId path summary sections stats warnings | summaryChars summaryCharBudget overBudget",
	"HandoffSection":               "title body",
	"MigrationExecuteParams":       "previewId path? continue? inject? goalRounds? | workDoneToken? summary? allowOverBudget?",
	"MigrationExecuteResult":       "targetSessionId modelTransferred goalCreated goalPaused kickoffSent warnings",
	"SessionUpdateNotification":    "sessionId entry",
	"ContextCompactedNotification": "sessionId entryId harness trigger preTokens? postTokens? estimated? | shadowedTokens? cause?",
	"CheckpointSavedNotification":  "sessionId entryId reason provenance method hot",
	"RestoredNotification":         "sessionId mode reason? nativeError? checkpointEntryId?",
	"ErrorData":                    "code detail? missing? | field?",
	"TextContent":                  "type text",
	"ImageContent":                 "type mediaType data",
	"HostEventNotification":        "nativeId entry? gauge? | model? exit?",
	"HostEntry":                    "kind payload nativeId? | tokenEstimate?",
	"Gauge":                        "used size",

	// Bridge's own additions and the LSP base types.
	"ClientInfo":                           "name version?",
	"ClientCapabilities":                   "window? experimental? session? | workspace? textDocument? notebookDocument? general?",
	"SessionClientCapabilities":            "requestPermission?",
	"SessionRequestPermissionParams":       "sessionId toolCall options",
	"PermissionToolCall":                   "toolCallId title? kind? rawInput?",
	"PermissionOption":                     "optionId name kind",
	"SessionRequestPermissionResult":       "outcome",
	"HostedRequestPermissionParams":        "nativeId toolCall options?",
	"HostedRequestPermissionResult":        "outcome",
	"PermissionOutcome":                    "outcome optionId?",
	"WindowClientCapabilities":             "workDoneProgress? showMessage? | showDocument?",
	"ShowMessageRequestClientCapabilities": "messageActionItem?",
	"MessageActionItemCapabilities":        "additionalPropertiesSupport?",
	"ShowDocumentClientCapabilities":       "support?",
	"ServerCapabilities":                   "methods notifications harnesses? hostMethods? experimental?",
	"InitializedParams":                    "",
	"CancelParams":                         "id",
	"ProgressParams":                       "token value",
	"WorkDoneProgressCreateParams":         "token",
	"WorkDoneProgressCancelParams":         "token",
	"WorkDoneProgressBegin":                "kind title cancellable? message? percentage?",
	"WorkDoneProgressReport":               "kind cancellable? message? percentage?",
	"WorkDoneProgressEnd":                  "kind message?",
	"ShowMessageParams":                    "type message",
	"LogMessageParams":                     "type message",
	"SessionCancelParams":                  "sessionId | clearQueue?",
	"SessionQueueParams":                   "sessionId",
	"SessionQueueResult":                   "items",
	"QueuedPrompt":                         "promptId text images? queuedAt",
	"SessionWithdrawParams":                "sessionId promptId",
	"SessionWithdrawResult":                "",
	"SessionUsageParams":                   "sessionId? since? until? groupBy?",
	"SessionUsageResult":                   "groups total",
	"UsageGroup":                           "key? harness? reports inputTokens outputTokens cacheReadTokens cacheWriteTokens costUsd estimatedUsd unpricedReports",
	"SessionRepo":                          "root baseCommit worktree? branch? removed? sourceDirty?",
	"SessionDiffParams":                    "sessionId since?",
	"SessionDiffResult":                    "baseCommit dir branch? shared note? files diff truncated?",
	"DiffFile":                             "path added removed binary? untracked?",
	"QueueChangedNotification":             "sessionId items",
	"SessionChangedNotification":           "sessionId title archived headId",
	"SessionSearchParams":                  "query harness? cwd? sessionId? since? until? cursor? limit?",
	"SessionSearchResult":                  "hits nextCursor?",
	"SearchHit":                            "sessionId entryId seq kind harness sessionTitle? cwd? createdAt snippet highlights score",
	"TextSpan":                             "start end",
	"SessionExportParams":                  "sessionId format?",
	"SessionExportResult":                  "format content",
	"DiscoverSummary":                      "harness roots files imported unchanged entries failed?",
	"DiscoverFailure":                      "path error",
	"SessionForkParams":                    "sessionId entryId? target cwd? workDoneToken?",
	"SessionForkResult":                    "sessionId harness nativeSessionId? origin projectedEntries",
	"ForkOrigin":                           "sessionId entryId harness",
	"SessionCancelResult":                  "",
	"SessionRenameParams":                  "sessionId title",
	"SessionRenameResult":                  "",
	"SessionArchiveParams":                 "sessionId",
	"SessionArchiveResult":                 "",
	"HostAck":                              "",
	"HostProbeParams":                      "",
	"HostProbeResult":                      "harness? binary? version? capabilities",
	"HostSessionListParams":                "cwd?",
	"HostSessionListResult":                "sessions",
	"HostSession":                          "nativeId title? cwd? updatedAt?",
	"HostSessionCreateParams":              "cwd preset? model? effort? title?",
	"HostSessionCreateResult":              "nativeId",
	"HostSessionResumeParams":              "nativeId cwd preset? model? effort?",
	"HostSessionResumeResult":              "nativeId",
	"HostSessionHistoryParams":             "nativeId",
	"HostSessionHistoryResult":             "entries",
	"HostSessionModelsParams":              "",
	"HostSessionModelsResult":              "models",
	"Model":                                "id name? efforts? vision? | contextWindow?",
	"SessionModelsParams":                  "sessionId",
	"SessionModelsResult":                  "models model? effort?",
	"SessionSelectModelParams":             "sessionId model? effort?",
	"SessionSelectModelResult":             "model? effort? downgrade? checkpointEntryId? checkpointNote?",
	"HostSelectModelParams":                "nativeId model? effort?",
	"HostSessionPromptParams":              "nativeId content",
	"HostSessionPromptResult":              "stopReason",
	"HostSessionParams":                    "nativeId",
	"HostSessionRenameParams":              "nativeId title",
	"HostAttachmentParams":                 "nativeId ref",
	"HostAttachmentResult":                 "content",
	"HostCompactParams":                    "nativeId focus?",
	"HostCompactResult":                    "focusApplied focusNote?",
	"HostWorkspaceListParams":              "",
	"HostWorkspaceListResult":              "workspaces",
	"Workspace":                            "path name?",
	"HostPresetListParams":                 "",
	"HostPresetListResult":                 "presets",
	"Preset":                               "name harness description? model? effort? allowedTools? disallowedTools? permissionMode? appendSystemPrompt? profile? approvalPolicy? agent?",
	"HostGoalCreateParams":                 "nativeId text rounds?",
	"HostGoalCreateResult":                 "goalId",
	"HostGoalParams":                       "nativeId goalId",
	"HostExit":                             "exitCode stderrTail? error?",
}

// shape splits a shapes entry into all members and the required ones.
func shape(s string) (all, required []string) {
	for _, f := range strings.Fields(strings.ReplaceAll(s, "|", " ")) {
		name := strings.TrimSuffix(f, "?")
		all = append(all, name)
		if name == f {
			required = append(required, name)
		}
	}
	sort.Strings(all)
	sort.Strings(required)
	return all, required
}

// fill returns a value of t with every member set to something non-zero
// that the schema accepts.
func fill(t reflect.Type) reflect.Value {
	switch t {
	case reflect.TypeOf(time.Time{}):
		return reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	case reflect.TypeOf(json.RawMessage{}):
		return reflect.ValueOf(json.RawMessage(`{"text":"hi"}`))
	case reflect.TypeOf(schema.RequestID{}):
		return reflect.ValueOf(schema.NumberID(7))
	case reflect.TypeOf(schema.ProgressToken{}):
		return reflect.ValueOf(schema.StringToken("tok"))
	case reflect.TypeOf(schema.Content{}):
		return reflect.ValueOf(schema.Content{Type: schema.ContentText, Text: "hello"})
	case reflect.TypeOf(schema.WorkDoneProgress{}):
		return reflect.ValueOf(schema.WorkDoneProgress{Kind: schema.ProgressBegin, Title: "import"})
	}
	if v, ok := enumValue(t); ok {
		return v
	}
	v := reflect.New(t).Elem()
	if t == reflect.TypeOf(schema.Entry{}) {
		// Entry is a union on kind: a kind and its payload.
		defer func() { v.FieldByName("Kind").SetString(string(core.KindUserMessage)) }()
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if c, ok := constOf(f); ok {
				v.Field(i).SetString(c)
				continue
			}
			if e, ok := tagValue(f, "enum"); ok {
				v.Field(i).SetString(e)
				continue
			}
			v.Field(i).Set(fill(f.Type))
		}
	case reflect.Pointer:
		v = reflect.New(t.Elem())
		v.Elem().Set(fill(t.Elem()))
	case reflect.Slice:
		v = reflect.Append(reflect.MakeSlice(t, 0, 1), fill(t.Elem()))
	case reflect.Map:
		v = reflect.MakeMap(t)
		v.SetMapIndex(reflect.ValueOf("k").Convert(t.Key()), fill(t.Elem()))
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float64:
		v.SetFloat(1.5)
	default:
		panic("fill: unhandled " + t.String())
	}
	return v
}

// minimal returns the smallest value of t a sender may send: every member
// zero except enumerations, tags and unions, which must hold a valid value,
// and nested required objects, which are minimal too.
func minimal(t reflect.Type) reflect.Value {
	if t == reflect.TypeOf(schema.Entry{}) {
		// Entry is a union on kind: a kind and its payload's required members.
		return reflect.ValueOf(schema.Entry{Kind: string(core.KindUserMessage), Payload: json.RawMessage(`{"text":""}`)})
	}
	v := reflect.New(t).Elem()
	if t.Kind() != reflect.Struct || t == reflect.TypeOf(time.Time{}) {
		return v
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch {
		case !f.IsExported():
		case hasConst(f):
			c, _ := constOf(f)
			v.Field(i).SetString(c)
		case isScalarSchema(f.Type):
			v.Field(i).Set(fill(f.Type))
		case hasTag(f, "minItems"):
			v.Field(i).Set(fill(f.Type))
		case f.Type.Kind() == reflect.Struct:
			v.Field(i).Set(minimal(f.Type))
		}
	}
	return v
}

func hasConst(f reflect.StructField) bool { _, ok := constOf(f); return ok }

// isScalarSchema reports whether t's schema is an enumeration or a union
// whose zero value is not valid.
func isScalarSchema(t reflect.Type) bool {
	if _, ok := enumValue(t); ok {
		return true
	}
	switch t {
	case reflect.TypeOf(schema.Content{}), reflect.TypeOf(schema.WorkDoneProgress{}):
		return true
	}
	return false
}

// enumValue returns the first value of an enumerated type's schema.
func enumValue(t reflect.Type) (reflect.Value, bool) {
	sh, ok := schema.Shapes()[t]
	if !ok || len(sh.Enum) == 0 {
		return reflect.Value{}, false
	}
	v := reflect.New(t).Elem()
	switch e := sh.Enum[0].(type) {
	case string:
		v.SetString(e)
	case int:
		v.SetInt(int64(e))
	}
	return v, true
}

// tagValue returns the first value of key in f's jsonschema tag.
func tagValue(f reflect.StructField, key string) (string, bool) {
	for _, kv := range strings.Split(f.Tag.Get("jsonschema"), ",") {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v, true
		}
	}
	return "", false
}

func hasTag(f reflect.StructField, key string) bool { _, ok := tagValue(f, key); return ok }

func constOf(f reflect.StructField) (string, bool) {
	for _, kv := range strings.Split(f.Tag.Get("jsonschema_extras"), ",") {
		if c, ok := strings.CutPrefix(kv, "const="); ok {
			return c, true
		}
	}
	return "", false
}

func keysOf(t *testing.T, b []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	var keys []string
	for k, v := range m {
		if string(v) == "null" {
			t.Errorf("member %s is null in %s", k, b)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return nonNil(keys)
}

// contractStructs lists every struct type reachable from the method table
// and the union variants.
func contractStructs() map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		// A contract struct is declared in schema, or in core and aliased
		// by schema (type Gauge = core.Gauge).
		if t.Kind() != reflect.Struct || (t.PkgPath() != reflect.TypeOf(schema.Entry{}).PkgPath() &&
			t.PkgPath() != reflect.TypeOf(core.Entry{}).PkgPath()) {
			return
		}
		if _, seen := out[t.Name()]; seen {
			return
		}
		switch t {
		case reflect.TypeOf(schema.RequestID{}), reflect.TypeOf(schema.ProgressToken{}),
			reflect.TypeOf(schema.Content{}), reflect.TypeOf(schema.WorkDoneProgress{}):
			return // unions and scalars, checked elsewhere
		case reflect.TypeOf(schema.WorkDoneProgressParams{}):
			return // embedded
		}
		out[t.Name()] = t
		for i := 0; i < t.NumField(); i++ {
			visit(t.Field(i).Type)
		}
	}
	for _, m := range schema.Methods() {
		for _, v := range []any{m.Params, m.Result} {
			if v != nil {
				visit(reflect.TypeOf(v))
			}
		}
	}
	for _, v := range []any{schema.ErrorData{}, schema.TextContent{}, schema.ImageContent{},
		schema.WorkDoneProgressBegin{}, schema.WorkDoneProgressReport{}, schema.WorkDoneProgressEnd{}} {
		visit(reflect.TypeOf(v))
	}
	return out
}

// TestShapes marshals every contract type twice, once filled and once
// zero, and checks the member names against the shapes table: filled gives
// every member, zero gives exactly the required ones and never a null. It
// also checks that the schema requires exactly those.
func TestShapes(t *testing.T) {
	bundle := loadBundle(t)
	structs := contractStructs()
	for name := range shapes {
		if _, ok := structs[name]; !ok {
			t.Errorf("shapes lists %s, which no method uses", name)
		}
	}
	for name, typ := range structs {
		t.Run(name, func(t *testing.T) {
			spec, ok := shapes[name]
			if !ok {
				t.Fatalf("%s is in the contract but not in the shapes table", name)
			}
			all, required := shape(spec)
			full, err := json.Marshal(fill(typ).Interface())
			if err != nil {
				t.Fatal(err)
			}
			if got := keysOf(t, full); !reflect.DeepEqual(got, nonNil(all)) {
				t.Errorf("filled %s has members %v, want %v", name, got, all)
			}
			zero, err := json.Marshal(reflect.New(typ).Elem().Interface())
			if err != nil {
				t.Fatal(err)
			}
			if got := keysOf(t, zero); !reflect.DeepEqual(got, nonNil(required)) {
				t.Errorf("zero %s has members %v, want the required %v", name, got, required)
			}
			def, ok := bundle.Defs[name]
			if !ok {
				t.Fatalf("bundle has no definition %s", name)
			}
			got := append([]string(nil), def.Required...)
			sort.Strings(got)
			if !reflect.DeepEqual(nonNil(got), nonNil(required)) {
				t.Errorf("schema requires %v, want %v", got, required)
			}
			var props []string
			for p := range def.Properties {
				props = append(props, p)
			}
			sort.Strings(props)
			if !reflect.DeepEqual(nonNil(props), nonNil(all)) {
				t.Errorf("schema properties %v, want %v", props, all)
			}
		})
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// TestSessionResumeResultWire pins one result member by member, as a client
// reads it.
func TestSessionResumeResultWire(t *testing.T) {
	b, err := json.Marshal(schema.SessionResumeResult{Mode: schema.ModeCheckpointRestored,
		Reason: "native resume failed", NativeError: "no such thread", CheckpointEntryID: "e9"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"mode":"checkpoint_restored","reason":"native resume failed","nativeError":"no such thread","checkpointEntryId":"e9"}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
}
