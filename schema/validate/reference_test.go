package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/bridge-dev/bridge/schema"
)

// The package's validator covers the part of JSON Schema 2020-12 the
// generated bundle uses. These tests hold it to a complete, maintained
// 2020-12 implementation (santhosh-tekuri/jsonschema, linked into tests
// only: its package init compiles every draft's meta-schema, which cost
// `bridge` a quarter of its startup): for every definition of the bundle,
// a valid value and many single mutations of it must get the same verdict,
// and the same field and message with the wording the package had on top
// of that implementation.

// reference compiles a definition of the bundle with the reference validator.
type reference struct {
	c    *jsonschema.Compiler
	defs map[string]*jsonschema.Schema
}

const refURL = "urn:bridge:" + schema.BundleFile

func newReference(t *testing.T) *reference {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema.Bundle()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(refURL, doc); err != nil {
		t.Fatal(err)
	}
	return &reference{c: c, defs: map[string]*jsonschema.Schema{}}
}

// check validates raw against name; "" when valid, else "field|message".
func (r *reference) check(t *testing.T, name string, raw []byte) string {
	t.Helper()
	s, ok := r.defs[name]
	if !ok {
		var err error
		if s, err = r.c.Compile(refURL + "#/$defs/" + name); err != nil {
			t.Fatalf("reference: compile %s: %v", name, err)
		}
		r.defs[name] = s
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Validate(inst)
	if err == nil {
		return ""
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		t.Fatalf("reference: %v", err)
	}
	e := refDescribe(ve)
	return e.Field + "|" + e.Message
}

// ours is the same check with the package's validator.
func ours(t *testing.T, name string, raw []byte) string {
	t.Helper()
	err := JSON(name, raw)
	if err == nil {
		return ""
	}
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("%s: %v", name, err)
	}
	return e.Field + "|" + e.Message
}

func bundleDefs(t *testing.T) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(schema.Bundle()))
	d.UseNumber()
	var doc map[string]any
	if err := d.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc["$defs"].(map[string]any)
}

// TestEveryDefinitionCompiles: the validator supports every keyword the
// bundle uses (a generator change that needs more fails here, not on a
// client's request).
func TestEveryDefinitionCompiles(t *testing.T) {
	defs := bundleDefs(t)
	if len(defs) < 50 {
		t.Fatalf("only %d definitions in the bundle", len(defs))
	}
	for name := range defs {
		if _, err := def(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestUnsupportedKeywordIsRefused: a schema with a keyword outside the
// supported part fails to compile, naming the keyword, instead of being
// ignored (which would accept what the schema forbids).
func TestUnsupportedKeywordIsRefused(t *testing.T) {
	c, err := newCompiler([]byte(`{"$defs":{"P":{"type":"string","pattern":"^a"},"Q":{"$ref":"#/$defs/P"},"R":{"$ref":"other.json#/x"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"P", "Q"} {
		if _, err := c.def(name); err == nil || !strings.Contains(err.Error(), `keyword "pattern" is not supported`) {
			t.Errorf("%s: err = %v, want the unsupported keyword named", name, err)
		}
	}
	if _, err := c.def("R"); err == nil || !strings.Contains(err.Error(), "not a definition of the bundle") {
		t.Errorf("R: err = %v", err)
	}
	if _, err := c.def("Missing"); err == nil {
		t.Error("an unknown definition compiled")
	}
}

// TestAgreesWithReferenceValidator: every definition, a valid value of it
// and single mutations of that value (wrong types, missing and unknown
// members, out-of-range numbers, unknown enum and tag values, nested the
// same way), checked by both validators.
func TestAgreesWithReferenceValidator(t *testing.T) {
	defs := bundleDefs(t)
	ref := newReference(t)
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	g := &gen{defs: defs}
	var cases, invalid, valid int
	for _, name := range names {
		for _, variant := range []bool{false, true} {
			base := g.value(defs[name], variant, 0)
			for _, m := range mutations(base) {
				raw, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				want := ref.check(t, name, raw)
				got := ours(t, name, raw)
				cases++
				if want == "" {
					valid++
				} else {
					invalid++
				}
				if got != want {
					t.Errorf("%s %s:\n ours      %q\n reference %q", name, raw, got, want)
				}
			}
		}
	}
	if valid < 100 || invalid < 1000 {
		t.Fatalf("too few cases: %d valid, %d invalid", valid, invalid)
	}
	t.Logf("%d cases: %d valid, %d invalid", cases, valid, invalid)
}

// TestRequestParamsOnFirstUse: nothing is compiled before the first
// validation, and the first one (initialize's params, the first request a
// client sends) validates and words a violation.
func TestRequestParamsOnFirstUse(t *testing.T) {
	mu.Lock()
	comp = nil
	mu.Unlock()
	if err := JSON("InitializeParams", []byte(`{"capabilities":{}}`)); err != nil {
		t.Fatalf("valid initialize params: %v", err)
	}
	mu.Lock()
	comp = nil
	mu.Unlock()
	err := JSON("InitializeParams", []byte(`{"capabilities":{},"processId":"x"}`))
	var ve *Error
	if e, ok := err.(*Error); ok {
		ve = e
	}
	if ve == nil || ve.Field != "processId" {
		t.Fatalf("err = %#v, want a violation of processId", err)
	}
}

// gen makes a valid value of a schema.
type gen struct{ defs map[string]any }

// value: variant false fills only required members (and the first oneOf
// branch), true fills every member (and the last branch).
func (g *gen) value(s any, variant bool, depth int) any {
	m, ok := s.(map[string]any)
	if !ok {
		return "anything"
	}
	if ref, ok := m["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		if depth > 12 { // a definition that contains itself: stop at an optional member
			return nil
		}
		return g.value(g.defs[name], variant, depth+1)
	}
	if c, ok := m["const"]; ok {
		return c
	}
	if e, ok := m["enum"].([]any); ok {
		if variant {
			return e[len(e)-1]
		}
		return e[0]
	}
	if one, ok := m["oneOf"].([]any); ok {
		branch := one[0]
		if variant {
			branch = one[len(one)-1]
		}
		if m["type"] != "object" {
			return g.value(branch, variant, depth)
		}
		// An object whose branches pin some of its members (Entry: kind
		// and payload): the object, with those members the branch's.
		out := g.value(without(m, "oneOf"), variant, depth).(map[string]any)
		props, _ := branch.(map[string]any)["properties"].(map[string]any)
		for p, ps := range props {
			out[p] = g.value(ps, variant, depth)
		}
		return out
	}
	switch m["type"] {
	case "object":
		out := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		req := map[string]bool{}
		for _, r := range asList(m["required"]) {
			req[r.(string)] = true
		}
		for p, ps := range props {
			if req[p] || variant {
				out[p] = g.value(ps, variant, depth)
			}
		}
		if ap, ok := m["additionalProperties"].(map[string]any); ok && variant {
			out["extra"] = g.value(ap, variant, depth)
		}
		return out
	case "array":
		n := 1
		if variant {
			n = 2
		}
		out := []any{}
		for i := 0; i < n; i++ {
			out = append(out, g.value(m["items"], variant, depth))
		}
		return out
	case "string":
		if m["format"] == "date-time" {
			return "2026-11-30T12:00:00Z"
		}
		return "s"
	case "integer", "number":
		if v, ok := m["minimum"].(json.Number); ok {
			return v
		}
		return json.Number("3")
	case "boolean":
		return variant
	case "null":
		return nil
	}
	return map[string]any{"free": []any{1, "x"}}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// mutations returns v itself, then copies of v each with one change at
// one place.
func mutations(v any) []any {
	out := []any{v}
	walk(v, func(set func(any) any, cur any) {
		for _, r := range []any{nil, true, json.Number("7"), json.Number("-1"), json.Number("1.5"), json.Number("100000"),
			"zzz", "2026-13-99", []any{}, []any{"x"}, map[string]any{}, map[string]any{"type": "video"}} {
			out = append(out, set(r))
		}
		if obj, ok := cur.(map[string]any); ok {
			out = append(out, set(with(obj, "unknownMember", "x")))
			for k := range obj {
				out = append(out, set(without(obj, k)))
			}
		}
	})
	return out
}

// walk calls f for every position in v with a function that returns a
// copy of the whole value with that position replaced.
func walk(v any, f func(set func(any) any, cur any)) {
	var rec func(cur any, rebuild func(any) any)
	rec = func(cur any, rebuild func(any) any) {
		f(rebuild, cur)
		switch c := cur.(type) {
		case map[string]any:
			keys := make([]string, 0, len(c))
			for k := range c {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				k := k
				rec(c[k], func(x any) any { return rebuild(with(c, k, x)) })
			}
		case []any:
			for i := range c {
				i := i
				rec(c[i], func(x any) any {
					cp := append([]any(nil), c...)
					cp[i] = x
					return rebuild(cp)
				})
			}
		}
	}
	rec(v, func(x any) any { return x })
}

func with(m map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for kk, vv := range m {
		out[kk] = vv
	}
	out[k] = v
	return out
}

func without(m map[string]any, k string) map[string]any {
	out := with(m, "", nil)
	delete(out, "")
	delete(out, k)
	return out
}

// refDescribe is the wording the package had on top of the reference
// validator (kept here to check the validator against).
func refDescribe(e *jsonschema.ValidationError) *Error {
	leaf := refPick(e)
	field := path(leaf.InstanceLocation)
	switch k := leaf.ErrorKind.(type) {
	case *kind.Required:
		f := join(field, k.Missing[0])
		return &Error{Field: f, Message: fmt.Sprintf("missing required field %q", f)}
	case *kind.Type:
		if field == "" {
			return &Error{Message: fmt.Sprintf("params must be %s", article(k.Want))}
		}
		return &Error{Field: field, Message: fmt.Sprintf("field %q must be %s, not %s", field, article(k.Want), k.Got)}
	case *kind.Enum:
		return &Error{Field: field, Message: fmt.Sprintf("%s %s is not one of %s", field, show(k.Got), showList(k.Want))}
	case *kind.Const:
		return &Error{Field: field, Message: fmt.Sprintf("%s %s is not %s", field, show(k.Got), show(k.Want))}
	case *kind.MinItems:
		return &Error{Field: field, Message: fmt.Sprintf("%s must hold at least %d item(s), not %d", field, k.Want, k.Got)}
	case *kind.MaxItems:
		return &Error{Field: field, Message: fmt.Sprintf("%s must hold at most %d item(s), not %d", field, k.Want, k.Got)}
	case *kind.Minimum:
		return &Error{Field: field, Message: fmt.Sprintf("%s must be at least %s, not %s", field, rat(k.Want), rat(k.Got))}
	case *kind.Maximum:
		return &Error{Field: field, Message: fmt.Sprintf("%s must be at most %s, not %s", field, rat(k.Want), rat(k.Got))}
	case *kind.MinLength:
		return &Error{Field: field, Message: fmt.Sprintf("%s must be at least %d character(s) long", field, k.Want)}
	case *kind.MaxLength:
		return &Error{Field: field, Message: fmt.Sprintf("%s must be at most %d characters long, not %d", field, k.Want, k.Got)}
	case *kind.AdditionalProperties:
		return &Error{Field: join(field, k.Properties[0]), Message: fmt.Sprintf("%s is not a known field", join(field, k.Properties[0]))}
	case *kind.OneOf:
		if tag, want := refDiscriminator(leaf); tag != nil {
			f := path(tag.InstanceLocation)
			return &Error{Field: f, Message: fmt.Sprintf("%s %s is not one of %s", f, show(tag.ErrorKind.(*kind.Const).Got), showList(want))}
		}
	}
	msg := strings.TrimSpace(leaf.Error())
	if field != "" {
		msg = field + ": " + msg
	}
	return &Error{Field: field, Message: msg}
}

// refPick walks down to one leaf violation. Where no branch of a oneOf
// matched, it follows the branch whose tag (a const) matched; when every
// branch failed on its tag, the oneOf itself is the leaf.
func refPick(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(e.Causes) > 0 {
		if _, ok := e.ErrorKind.(*kind.OneOf); ok {
			var untagged []*jsonschema.ValidationError
			for _, c := range e.Causes {
				if refConstFailure(c) == nil {
					untagged = append(untagged, c)
				}
			}
			switch len(untagged) {
			case 0:
				return e
			case len(e.Causes):
				// No branch has a tag: the first branch's violation.
			default:
				e = untagged[0]
				continue
			}
		}
		e = e.Causes[0]
	}
	return e
}

// refConstFailure returns the const violation at the shallowest depth in e.
func refConstFailure(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	if _, ok := e.ErrorKind.(*kind.Const); ok {
		return e
	}
	for _, c := range e.Causes {
		if f := refConstFailure(c); f != nil {
			return f
		}
	}
	return nil
}

// refDiscriminator returns, for a oneOf whose every branch failed on the same
// tag, one tag violation and the values the branches want.
func refDiscriminator(e *jsonschema.ValidationError) (*jsonschema.ValidationError, []any) {
	var first *jsonschema.ValidationError
	var want []any
	for _, c := range e.Causes {
		f := refConstFailure(c)
		if f == nil || (first != nil && path(f.InstanceLocation) != path(first.InstanceLocation)) {
			return nil, nil
		}
		if first == nil {
			first = f
		}
		want = append(want, f.ErrorKind.(*kind.Const).Want)
	}
	return first, want
}

// TestSplitDefsMatchesDecoding: the scanner that finds the bundle's
// definitions without decoding them finds the same ones encoding/json
// does, and refuses truncated or malformed text instead of panicking.
func TestSplitDefsMatchesDecoding(t *testing.T) {
	var doc struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(schema.Bundle(), &doc); err != nil {
		t.Fatal(err)
	}
	got, err := splitDefs(schema.Bundle())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(doc.Defs) {
		t.Fatalf("%d definitions, encoding/json finds %d", len(got), len(doc.Defs))
	}
	for name, raw := range doc.Defs {
		if !bytes.Equal(bytes.TrimSpace(got[name]), bytes.TrimSpace(raw)) {
			t.Errorf("%s: scanned %.60q, decoded %.60q", name, got[name], raw)
		}
	}
	small := []byte(`{"a":[1,{"}":"]"}],"$defs":{"X":{"type":"string","description":"a \"quoted\" \\ brace }"},"Y":true,"Z":3}}`)
	defs, err := splitDefs(small)
	if err != nil {
		t.Fatal(err)
	}
	if string(defs["X"]) != `{"type":"string","description":"a \"quoted\" \\ brace }"}` || string(defs["Y"]) != "true" || string(defs["Z"]) != "3" {
		t.Errorf("defs = %q", defs)
	}
	for i := 0; i < len(small); i++ {
		splitDefs(small[:i]) // must not panic
	}
	for _, bad := range []string{``, `[]`, `{"$defs":}`, `{"$defs":{"X" {}}}`, `{"a":1}`, `{"$defs":{"X":{}}`} {
		if _, err := splitDefs([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestNotJSON: a value that is not one JSON value is a violation that says
// so, not a failure of the validator.
func TestNotJSON(t *testing.T) {
	for _, raw := range []string{`{"capabilities":`, `{} {}`, `{}x`, ``} {
		err := JSON("InitializeParams", []byte(raw))
		e, ok := err.(*Error)
		if !ok || !strings.HasPrefix(e.Message, "not valid JSON") {
			t.Errorf("%q: err = %v, want a \"not valid JSON\" violation", raw, err)
		}
	}
}
