package schema_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/schema/generate"
)

type defSchema struct {
	Required   []string                   `json:"required"`
	Properties map[string]json.RawMessage `json:"properties"`
	OneOf      []struct {
		Ref string `json:"$ref"`
	} `json:"oneOf"`
	Enum []any `json:"enum"`
}

type bundleDoc struct {
	Defs map[string]defSchema `json:"$defs"`
}

func loadBundle(t *testing.T) bundleDoc {
	t.Helper()
	files, err := generate.Files()
	if err != nil {
		t.Fatal(err)
	}
	var b bundleDoc
	if err := json.Unmarshal(files[schema.BundleFile], &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestErrorCodesAreCores checks that the contract's ErrorCode is core's
// code (one list, written once in core) and that the generated enum lists
// core.Codes in order.
func TestErrorCodesAreCores(t *testing.T) {
	if reflect.TypeFor[schema.ErrorCode]() != reflect.TypeFor[core.Code]() {
		t.Errorf("schema.ErrorCode is %v, want core.Code", reflect.TypeFor[schema.ErrorCode]())
	}
	enum := loadBundle(t).Defs["ErrorCode"].Enum
	if len(enum) != len(core.Codes) {
		t.Fatalf("ErrorCode enum has %d values, core has %d", len(enum), len(core.Codes))
	}
	for i, v := range enum {
		if v != string(core.Codes[i]) {
			t.Errorf("ErrorCode enum[%d] = %v, want %s", i, v, core.Codes[i])
		}
	}
}

// TestTaggedUnions checks that each union is a oneOf of its variants and
// that each variant pins its tag with a const and requires it.
func TestTaggedUnions(t *testing.T) {
	files, err := generate.Files()
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Defs map[string]map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(files[schema.BundleFile], &raw); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		union, tag string
		variants   map[string]string
	}{
		{"Content", "type", map[string]string{"TextContent": "text", "ImageContent": "image"}},
		{"WorkDoneProgress", "kind", map[string]string{"WorkDoneProgressBegin": "begin",
			"WorkDoneProgressReport": "report", "WorkDoneProgressEnd": "end"}},
	}
	for _, c := range cases {
		oneOf, _ := raw.Defs[c.union]["oneOf"].([]any)
		if len(oneOf) != len(c.variants) {
			t.Errorf("%s: oneOf has %d members, want %d", c.union, len(oneOf), len(c.variants))
		}
		seen := map[string]bool{}
		for _, o := range oneOf {
			ref, _ := o.(map[string]any)["$ref"].(string)
			name := strings.TrimPrefix(ref, "#/$defs/")
			want, ok := c.variants[name]
			if !ok {
				t.Errorf("%s: oneOf member %q is not a variant", c.union, ref)
				continue
			}
			seen[name] = true
			v := raw.Defs[name]
			tag, _ := v["properties"].(map[string]any)[c.tag].(map[string]any)
			if tag["const"] != want {
				t.Errorf("%s.%s const = %v, want %q", name, c.tag, tag["const"], want)
			}
			req, _ := v["required"].([]any)
			found := false
			for _, r := range req {
				found = found || r == c.tag
			}
			if !found {
				t.Errorf("%s does not require its tag %s", name, c.tag)
			}
		}
		if len(seen) != len(c.variants) {
			t.Errorf("%s: variants in oneOf %v, want %v", c.union, seen, c.variants)
		}
	}
	// The session/prompt params file carries the union too.
	var prompt map[string]any
	if err := json.Unmarshal(files[generate.FileName("session/prompt", "params")], &prompt); err != nil {
		t.Fatal(err)
	}
	content, _ := prompt["$defs"].(map[string]any)["Content"].(map[string]any)
	if _, ok := content["oneOf"]; !ok {
		t.Errorf("session_prompt.params.schema.json: Content has no oneOf: %v", content)
	}
}

func TestMethodTable(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range schema.Methods() {
		if seen[m.Name] {
			t.Errorf("%s is listed twice", m.Name)
		}
		seen[m.Name] = true
		got, ok := schema.MethodByName(m.Name)
		if !ok || got.Name != m.Name {
			t.Errorf("MethodByName(%q) = %v, %v", m.Name, got.Name, ok)
		}
		if m.Kind == schema.Notification && m.Result != nil {
			t.Errorf("notification %s has a result type", m.Name)
		}
		for _, v := range []any{m.Params, m.Result} {
			if v != nil && reflect.TypeOf(v).Kind() != reflect.Struct {
				t.Errorf("%s: params and results must be struct values, got %T", m.Name, v)
			}
		}
		if strings.HasPrefix(m.Name, "host/") && m.Kind == schema.Request {
			if m.Direction != schema.ServerToClient || "host/"+m.Capability != m.Name {
				t.Errorf("%s: direction %v capability %q", m.Name, m.Direction, m.Capability)
			}
		}
		if m.Doc == "" {
			t.Errorf("%s has no doc", m.Name)
		}
	}
	if _, ok := schema.MethodByName("session/nope"); ok {
		t.Error("MethodByName found an unknown method")
	}
	// ARCHITECTURE.md, The client contract: every method and notification it names.
	for _, name := range []string{"initialize", "initialized", "shutdown", "exit", "$/cancelRequest",
		"$/progress", "window/showMessage", "window/logMessage", "window/workDoneProgress/create",
		"bridge/doctor", "session/list", "session/create", "session/prompt", "session/cancel",
		"session/rename", "session/archive", "session/history", "session/resume", "session/compact",
		"session/checkpoint", "session/import", "migration/preview", "migration/execute",
		"session/update", "session/contextCompacted", "session/checkpointSaved", "session/restored",
		"host/event", "host/probe", "host/goal.clear"} {
		if !seen[name] {
			t.Errorf("the table lacks %s", name)
		}
	}
	// A hosting client can provide every capability the port requires.
	for _, c := range core.RequiredCapabilities {
		if _, ok := schema.MethodByName("host/" + c); !ok {
			t.Errorf("no host/%s request for required capability %s", c, c)
		}
	}
	reqs := schema.Names(schema.ClientToServer, schema.Request)
	if !contains(reqs, "session/resume") || contains(reqs, "host/session.list") || contains(reqs, "session/update") {
		t.Errorf("Names(ClientToServer, Request) = %v", reqs)
	}
	notes := schema.Names(schema.ServerToClient, schema.Notification)
	if !contains(notes, "session/restored") || !contains(notes, "$/cancelRequest") || contains(notes, "host/event") {
		t.Errorf("Names(ServerToClient, Notification) = %v", notes)
	}
}

func contains(s []string, v string) bool {
	for _, e := range s {
		if e == v {
			return true
		}
	}
	return false
}

func TestIDsAreNumbersOrStrings(t *testing.T) {
	var p schema.CancelParams
	if err := json.Unmarshal([]byte(`{"id":42}`), &p); err != nil || p.ID != schema.NumberID(42) {
		t.Errorf("numeric id: %v %+v", err, p.ID)
	}
	if err := json.Unmarshal([]byte(`{"id":"42"}`), &p); err != nil || p.ID != schema.StringID("42") {
		t.Errorf("string id: %v %+v", err, p.ID)
	}
	for _, bad := range []string{`{"id":1.5}`, `{"id":{}}`, `{"id":true}`, `{"id":[1]}`} {
		if err := json.Unmarshal([]byte(bad), &p); err == nil {
			t.Errorf("%s: accepted as id %+v", bad, p.ID)
		}
	}
	b, _ := json.Marshal(schema.ProgressParams{Token: schema.StringToken("t1"),
		Value: schema.WorkDoneProgress{Kind: schema.ProgressEnd}})
	if string(b) != `{"token":"t1","value":{"kind":"end"}}` {
		t.Errorf("progress: %s", b)
	}
	var pp schema.ProgressParams
	if err := json.Unmarshal([]byte(`{"token":3,"value":{"kind":"report","percentage":0}}`), &pp); err != nil ||
		pp.Token != schema.NumberToken(3) || pp.Value.Percentage == nil || *pp.Value.Percentage != 0 {
		t.Errorf("progress round trip: %v %+v", err, pp)
	}
}

// TestGoValuesValidateAgainstTheirSchemas marshals a filled and a minimal
// value of every method's params and result and validates each against the
// generated per-method schema file with a JSON Schema 2020-12 validator
// (santhosh-tekuri/jsonschema, the one the rpc server uses); values a
// client must not get away with are refused.
func TestGoValuesValidateAgainstTheirSchemas(t *testing.T) {
	files, err := generate.Files()
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	for name, b := range files {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := c.AddResource("urn:test:"+name, doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	check := func(file string, raw []byte) error {
		s, err := c.Compile("urn:test:" + file)
		if err != nil {
			t.Fatalf("compile %s: %v", file, err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return s.Validate(inst)
	}
	n := 0
	for _, m := range schema.Methods() {
		for part, v := range map[string]any{"params": m.Params, "result": m.Result} {
			if v == nil {
				continue
			}
			typ := reflect.TypeOf(v)
			for label, val := range map[string]any{"filled": fill(typ).Interface(), "minimal": minimal(typ).Interface()} {
				b, err := json.Marshal(val)
				if err != nil {
					t.Fatalf("%s %s: %v", m.Name, part, err)
				}
				n++
				if err := check(generate.FileName(m.Name, part), b); err != nil {
					t.Errorf("%s %s (%s) %s refused: %v", m.Name, part, label, b, err)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("nothing validated")
	}
	// Values a client must not get away with.
	bad := []struct{ file, label, value string }{
		{"session_prompt.params.schema.json", "image without data", `{"sessionId":"s","content":[{"type":"image","mediaType":"image/png"}]}`},
		{"session_prompt.params.schema.json", "unknown content type", `{"sessionId":"s","content":[{"type":"audio","text":"x"}]}`},
		{"session_prompt.params.schema.json", "no content", `{"sessionId":"s","content":[]}`},
		{"session_resume.result.schema.json", "unknown mode", `{"mode":"warm"}`},
		{"session_create.params.schema.json", "missing cwd", `{"harness":"codex"}`},
		{"session_list.params.schema.json", "negative limit", `{"limit":-1}`},
		{"session_update.params.schema.json", "tool.started without toolId", `{"sessionId":"s","entry":{"id":"e","sessionId":"s","seq":1,"kind":"tool.started","payload":{"name":"Read"},"createdAt":"2026-01-02T03:04:05Z"}}`},
		{"session_update.params.schema.json", "user.message whose text is a number", `{"sessionId":"s","entry":{"id":"e","sessionId":"s","seq":1,"kind":"user.message","payload":{"text":7},"createdAt":"2026-01-02T03:04:05Z"}}`},
		{"session_update.params.schema.json", "session.restored in an unknown mode", `{"sessionId":"s","entry":{"id":"e","sessionId":"s","seq":1,"kind":"session.restored","payload":{"mode":"warm"},"createdAt":"2026-01-02T03:04:05Z"}}`},
		{"session_update.params.schema.json", "context.compacted with an unknown trigger", `{"sessionId":"s","entry":{"id":"e","sessionId":"s","seq":1,"kind":"context.compacted","payload":{"harness":"codex","trigger":"sometimes"},"createdAt":"2026-01-02T03:04:05Z"}}`},
		{"session_update.params.schema.json", "checkpoint of an unknown method", `{"sessionId":"s","entry":{"id":"e","sessionId":"s","seq":1,"kind":"checkpoint","payload":{"summary":"s","method":"guess"},"createdAt":"2026-01-02T03:04:05Z"}}`},
		{"migration_preview.params.schema.json", "unknown lang", `{"sessionId":"s","target":{},"lang":"fr"}`},
	}
	for _, b := range bad {
		if check(b.file, []byte(b.value)) == nil {
			t.Errorf("%s: accepted %s", b.label, b.value)
		}
	}
}

// TestEntryKindsAreTheRecordsKinds: the contract gives every kind core
// knows (core.RequiredFields) a payload type, once, and nothing else; and
// the generated Entry is the union of them, one branch per kind, each
// pinning kind and naming its payload definition, which requires exactly
// the kind's required members.
func TestEntryKindsAreTheRecordsKinds(t *testing.T) {
	seen := map[core.Kind]bool{}
	for _, k := range schema.EntryKinds() {
		if seen[k.Kind] {
			t.Errorf("%s is listed twice", k.Kind)
		}
		seen[k.Kind] = true
		if !k.Kind.Known() {
			t.Errorf("%s is not a kind core knows", k.Kind)
		}
		if reflect.TypeOf(k.Payload).Kind() != reflect.Struct {
			t.Errorf("%s: payload %T is not a struct", k.Kind, k.Payload)
		}
	}
	for k := range core.RequiredFields {
		if !seen[k] {
			t.Errorf("core kind %s has no payload type in schema.EntryKinds", k)
		}
	}
	files, err := generate.Files()
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Defs map[string]map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(files[schema.BundleFile], &raw); err != nil {
		t.Fatal(err)
	}
	oneOf, _ := raw.Defs["Entry"]["oneOf"].([]any)
	if len(oneOf) != len(schema.EntryKinds()) {
		t.Fatalf("Entry has %d branches, want %d", len(oneOf), len(schema.EntryKinds()))
	}
	for i, k := range schema.EntryKinds() {
		props := oneOf[i].(map[string]any)["properties"].(map[string]any)
		if c := props["kind"].(map[string]any)["const"]; c != string(k.Kind) {
			t.Errorf("branch %d: kind const %v, want %s", i, c, k.Kind)
		}
		name := generate.PayloadName(k.Kind)
		if ref := props["payload"].(map[string]any)["$ref"]; ref != "#/$defs/"+name {
			t.Errorf("%s: payload $ref %v, want %s", k.Kind, ref, name)
		}
		var req []string
		for _, r := range asAnyList(raw.Defs[name]["required"]) {
			req = append(req, r.(string))
		}
		if !reflect.DeepEqual(req, core.RequiredFields[k.Kind]) {
			t.Errorf("%s requires %v, want %v", name, req, core.RequiredFields[k.Kind])
		}
	}
}

func asAnyList(v any) []any { l, _ := v.([]any); return l }

// TestEnumsAreCores checks that each string enum of the record (a restore
// mode, a compaction trigger, a checkpoint's method…) is one type, core's,
// that schema aliases: the generated definition lists core's values in
// order, and the entry payloads that carry one refer to that definition, so
// the JSON Schema and the TypeScript union constrain the record's members
// as they do the wire's.
func TestEnumsAreCores(t *testing.T) {
	defs := loadBundle(t).Defs
	strs := func(vs any) []any {
		var out []any
		v := reflect.ValueOf(vs)
		for i := range v.Len() {
			out = append(out, v.Index(i).String())
		}
		return out
	}
	for _, c := range []struct {
		name       string
		schemaType reflect.Type
		coreType   reflect.Type
		values     []any
		members    []string // payload.member naming the definition
	}{
		{"CompactionTrigger", reflect.TypeFor[schema.CompactionTrigger](), reflect.TypeFor[core.CompactionTrigger](),
			strs(core.CompactionTriggers), []string{"ContextCompactedPayload.trigger"}},
		{"CompactionCause", reflect.TypeFor[schema.CompactionCause](), reflect.TypeFor[core.CompactionCause](),
			strs(core.CompactionCauses), []string{"ContextCompactedPayload.cause"}},
		{"RestoreMode", reflect.TypeFor[schema.RestoreMode](), reflect.TypeFor[core.RestoreMode](),
			strs(core.RestoreModes), []string{"SessionRestoredPayload.mode"}},
		{"CheckpointMethod", reflect.TypeFor[schema.CheckpointMethod](), reflect.TypeFor[core.CheckpointMethod](),
			strs(core.CheckpointMethods), []string{"CheckpointPayload.method", "CompactionPayload.method", "CompactionRequestedPayload.method"}},
		{"Provenance", reflect.TypeFor[schema.Provenance](), reflect.TypeFor[checkpoint.Provenance](),
			strs(checkpoint.Provenances), []string{"CheckpointPayload.provenance", "CompactionPayload.provenance"}},
		{"PermissionOptionKind", reflect.TypeFor[schema.PermissionOptionKind](), reflect.TypeFor[core.ApprovalOptionKind](),
			strs(core.ApprovalOptionKinds), []string{"ApprovalResolvedPayload.optionKind"}},
		{"DecidedBy", reflect.TypeFor[schema.DecidedBy](), reflect.TypeFor[core.DecidedBy](),
			strs(core.Deciders), []string{"ApprovalResolvedPayload.by"}},
		{"CheckpointSuppression", reflect.TypeFor[schema.CheckpointSuppression](), reflect.TypeFor[checkpoint.Suppression](),
			strs(checkpoint.Suppressions), []string{"SessionSuspendResult.suppressed"}},
	} {
		if c.schemaType != c.coreType {
			t.Errorf("schema.%s is %v, want %v", c.name, c.schemaType, c.coreType)
		}
		if got := defs[c.name].Enum; !reflect.DeepEqual(got, c.values) {
			t.Errorf("%s enum = %v, want core's %v", c.name, got, c.values)
		}
		for _, m := range c.members {
			def, member, _ := strings.Cut(m, ".")
			var p struct {
				Ref string `json:"$ref"`
			}
			if err := json.Unmarshal(defs[def].Properties[member], &p); err != nil || p.Ref != "#/$defs/"+c.name {
				t.Errorf("%s is %s, want a reference to %s", m, defs[def].Properties[member], c.name)
			}
		}
	}
}
