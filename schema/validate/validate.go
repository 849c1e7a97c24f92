// Package validate checks JSON values against the contract's generated JSON
// Schema (the bundle `bridge schema` prints) and words the first violation
// for a person, naming the field at fault. The rpc server validates every
// request's params with it before decoding them; the schema tests validate
// Go values with it.
//
// The validator covers the part of JSON Schema 2020-12 the generated bundle
// uses and refuses to compile any other keyword. Its tests check it against
// a complete, maintained 2020-12 implementation, which the binary does not
// link: that library compiles every draft's meta-schema in its package init
// and validated the whole bundle against them on the first request, which
// was most of `bridge serve`'s time to answer initialize.
package validate

import (
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/bridge-dev/bridge/schema"
)

// Error is one violation: the field at fault as a dotted path
// ("content[1].type", "" for the value as a whole) and a message that
// names it.
type Error struct {
	Field   string
	Message string
}

func (e *Error) Error() string { return e.Message }

var (
	mu   sync.Mutex
	comp *compiler
)

// def returns the compiled definition name, reading the bundle's
// definitions on the first call: nothing is read before the first
// validation.
func def(name string) (*node, error) {
	mu.Lock()
	defer mu.Unlock()
	if comp == nil {
		c, err := newCompiler(schema.Bundle())
		if err != nil {
			return nil, err
		}
		comp = c
	}
	return comp.def(name)
}

// DefName is the bundle's definition name of a contract type's value.
func DefName(v any) string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return ""
	}
	return t.Name()
}

// JSON validates raw (one JSON value) against the definition name. It
// returns an *Error for a violation, another error when the schema itself
// cannot be used.
func JSON(name string, raw []byte) error {
	s, err := def(name)
	if err != nil {
		return err
	}
	inst, err := decode(raw)
	if err != nil {
		return &Error{Message: "not valid JSON: " + err.Error()}
	}
	if v := s.validate(inst, make([]string, 0, 8)); v != nil {
		root := v
		if v.kind != kGroup {
			root = &violation{kind: kGroup, causes: []*violation{v}}
		}
		return describe(root)
	}
	return nil
}

// Value validates the JSON encoding of v against its type's definition.
func Value(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return JSON(DefName(v), raw)
}

// describe words the most telling violation of e.
func describe(e *violation) *Error {
	leaf := pick(e)
	field := path(leaf.loc)
	switch leaf.kind {
	case kRequired:
		f := join(field, leaf.names[0])
		return &Error{Field: f, Message: fmt.Sprintf("missing required field %q", f)}
	case kType:
		if field == "" {
			return &Error{Message: fmt.Sprintf("params must be %s", article(leaf.types))}
		}
		return &Error{Field: field, Message: fmt.Sprintf("field %q must be %s, not %s", field, article(leaf.types), leaf.gotType)}
	case kEnum:
		return &Error{Field: field, Message: fmt.Sprintf("%s %s is not one of %s", field, show(leaf.got), showList(leaf.wantList))}
	case kConst:
		return &Error{Field: field, Message: fmt.Sprintf("%s %s is not %s", field, show(leaf.got), show(leaf.want))}
	case kMinItems:
		return &Error{Field: field, Message: fmt.Sprintf("%s must hold at least %d item(s), not %d", field, leaf.wantN, leaf.gotN)}
	case kMaxItems:
		return &Error{Field: field, Message: fmt.Sprintf("%s must hold at most %d item(s), not %d", field, leaf.wantN, leaf.gotN)}
	case kMinimum:
		return &Error{Field: field, Message: fmt.Sprintf("%s must be at least %s, not %s", field, rat(leaf.wantR), rat(leaf.gotR))}
	case kMaximum:
		return &Error{Field: field, Message: fmt.Sprintf("%s must be at most %s, not %s", field, rat(leaf.wantR), rat(leaf.gotR))}
	case kMinLength:
		return &Error{Field: field, Message: fmt.Sprintf("%s must be at least %d character(s) long", field, leaf.wantN)}
	case kMaxLength:
		return &Error{Field: field, Message: fmt.Sprintf("%s must be at most %d characters long, not %d", field, leaf.wantN, leaf.gotN)}
	case kAdditional:
		return &Error{Field: join(field, leaf.names[0]), Message: fmt.Sprintf("%s is not a known field", join(field, leaf.names[0]))}
	case kOneOf:
		if tag, want := discriminator(leaf); tag != nil {
			f := path(tag.loc)
			return &Error{Field: f, Message: fmt.Sprintf("%s %s is not one of %s", f, show(tag.got), showList(want))}
		}
	}
	var b strings.Builder
	display(&b, leaf, 0)
	msg := strings.TrimSpace(b.String())
	if field != "" {
		msg = field + ": " + msg
	}
	return &Error{Field: field, Message: msg}
}

// display writes a violation and its causes, one per line, indented.
func display(b *strings.Builder, e *violation, indent int) {
	if !(e.kind == kRef && len(e.causes) == 1) {
		if indent > 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat("  ", indent-1))
			b.WriteString("- ")
		}
		indent++
		fmt.Fprintf(b, "at %s: %s", quote(pointer(e.loc)), e.text())
	}
	for _, c := range e.causes {
		display(b, c, indent)
	}
}

// text is a violation's message on its own (the wording of JSON Schema
// validators' output), for the violations describe has no sentence for.
func (e *violation) text() string {
	switch e.kind {
	case kFalse:
		return "false schema"
	case kType:
		return fmt.Sprintf("got %s, want %s", e.gotType, strings.Join(e.types, " or "))
	case kConst:
		if isComposite(e.want) {
			return "'const' failed"
		}
		return "value must be " + displayValue(e.want)
	case kEnum:
		var want []string
		for _, w := range e.wantList {
			if isComposite(w) {
				return "'enum' failed"
			}
			want = append(want, displayValue(w))
		}
		if len(want) == 1 {
			return "value must be " + want[0]
		}
		return "value must be one of " + strings.Join(want, ", ")
	case kRequired:
		return "missing properties " + quoteList(e.names)
	case kAdditional:
		return "additional properties " + quoteList(e.names) + " not allowed"
	case kMinItems:
		return fmt.Sprintf("minItems: got %d, want %d", e.gotN, e.wantN)
	case kMaxItems:
		return fmt.Sprintf("maxItems: got %d, want %d", e.gotN, e.wantN)
	case kMinLength:
		return fmt.Sprintf("minLength: got %d, want %d", e.gotN, e.wantN)
	case kMaxLength:
		return fmt.Sprintf("maxLength: got %d, want %d", e.gotN, e.wantN)
	case kMinimum:
		return "minimum: got " + rat(e.gotR) + ", want " + rat(e.wantR)
	case kMaximum:
		return "maximum: got " + rat(e.gotR) + ", want " + rat(e.wantR)
	case kOneOf:
		if len(e.matched) == 2 {
			return fmt.Sprintf("'oneOf' failed, subschemas %d, %d matched", e.matched[0], e.matched[1])
		}
		return "'oneOf' failed, none matched"
	}
	return "validation failed"
}

// pick walks down to one leaf violation. Where no branch of a oneOf
// matched, it follows the branch whose tag (a const) matched; when every
// branch failed on its tag, the oneOf itself is the leaf.
func pick(e *violation) *violation {
	for len(e.causes) > 0 {
		if e.kind == kOneOf {
			var untagged []*violation
			for _, c := range e.causes {
				if constFailure(c) == nil {
					untagged = append(untagged, c)
				}
			}
			switch len(untagged) {
			case 0:
				return e
			case len(e.causes):
				// No branch has a tag: the first branch's violation.
			default:
				e = untagged[0]
				continue
			}
		}
		e = e.causes[0]
	}
	return e
}

// constFailure returns the first const violation in e, depth first.
func constFailure(e *violation) *violation {
	if e.kind == kConst {
		return e
	}
	for _, c := range e.causes {
		if f := constFailure(c); f != nil {
			return f
		}
	}
	return nil
}

// discriminator returns, for a oneOf whose every branch failed on the same
// tag, one tag violation and the values the branches want.
func discriminator(e *violation) (*violation, []any) {
	var first *violation
	var want []any
	for _, c := range e.causes {
		f := constFailure(c)
		if f == nil || (first != nil && path(f.loc) != path(first.loc)) {
			return nil, nil
		}
		if first == nil {
			first = f
		}
		want = append(want, f.want)
	}
	return first, want
}

// pointer is a JSON Pointer to an instance location.
func pointer(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}

// quote single-quotes s for a message.
func quote(s string) string {
	s = strconv.Quote(s)
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s[1:len(s)-1] + "'"
}

func isComposite(v any) bool {
	switch v.(type) {
	case []any, map[string]any:
		return true
	}
	return false
}

func displayValue(v any) string {
	if s, ok := v.(string); ok {
		return quote(s)
	}
	return fmt.Sprint(v)
}

func quoteList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quote(n)
	}
	return strings.Join(out, ", ")
}

// path renders an instance location: members joined by dots, array
// indexes in brackets.
func path(loc []string) string {
	var b strings.Builder
	for _, p := range loc {
		if _, err := strconv.Atoi(p); err == nil && b.Len() > 0 {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func join(field, member string) string {
	if field == "" {
		return member
	}
	return field + "." + member
}

// article names JSON types for a person: "a string", "an integer or a string".
func article(types []string) string {
	var out []string
	for _, t := range types {
		switch t {
		case "integer", "object", "array":
			out = append(out, "an "+t)
		default:
			out = append(out, "a "+t)
		}
	}
	return strings.Join(out, " or ")
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

func showList(vs []any) string {
	var out []string
	for _, v := range vs {
		out = append(out, show(v))
	}
	return strings.Join(out, ", ")
}

func rat(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	return r.FloatString(3)
}
