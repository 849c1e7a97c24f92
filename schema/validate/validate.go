// Package validate checks JSON values against the contract's generated JSON
// Schema (the bundle `bridge schema` prints) with a maintained JSON Schema
// 2020-12 validator, and words the first violation for a person, naming
// the field at fault. The rpc server validates every request's params with
// it before decoding them; the schema tests validate Go values with it.
package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

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

const bundleURL = "urn:bridge:" + schema.BundleFile

var (
	compileOnce sync.Once
	compiler    *jsonschema.Compiler
	compileErr  error

	mu       sync.Mutex
	compiled = map[string]*jsonschema.Schema{}
)

func load() (*jsonschema.Compiler, error) {
	compileOnce.Do(func() {
		var buf bytes.Buffer
		if compileErr = schema.WriteBundle(&buf); compileErr != nil {
			return
		}
		doc, err := jsonschema.UnmarshalJSON(&buf)
		if err != nil {
			compileErr = fmt.Errorf("validate: read the schema bundle: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(bundleURL, doc); err != nil {
			compileErr = fmt.Errorf("validate: load the schema bundle: %w", err)
			return
		}
		compiler = c
	})
	return compiler, compileErr
}

// def returns the compiled schema of the bundle's definition name.
func def(name string) (*jsonschema.Schema, error) {
	c, err := load()
	if err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if s, ok := compiled[name]; ok {
		return s, nil
	}
	s, err := c.Compile(bundleURL + "#/$defs/" + name)
	if err != nil {
		return nil, fmt.Errorf("validate: compile %s: %w", name, err)
	}
	compiled[name] = s
	return s, nil
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
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return &Error{Message: "not valid JSON: " + err.Error()}
	}
	err = s.Validate(inst)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err
	}
	return describe(ve)
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
func describe(e *jsonschema.ValidationError) *Error {
	leaf := pick(e)
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
		if tag, want := discriminator(leaf); tag != nil {
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

// pick walks down to one leaf violation. Where no branch of a oneOf
// matched, it follows the branch whose tag (a const) matched; when every
// branch failed on its tag, the oneOf itself is the leaf.
func pick(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(e.Causes) > 0 {
		if _, ok := e.ErrorKind.(*kind.OneOf); ok {
			var untagged []*jsonschema.ValidationError
			for _, c := range e.Causes {
				if constFailure(c) == nil {
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

// constFailure returns the const violation at the shallowest depth in e.
func constFailure(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	if _, ok := e.ErrorKind.(*kind.Const); ok {
		return e
	}
	for _, c := range e.Causes {
		if f := constFailure(c); f != nil {
			return f
		}
	}
	return nil
}

// discriminator returns, for a oneOf whose every branch failed on the same
// tag, one tag violation and the values the branches want.
func discriminator(e *jsonschema.ValidationError) (*jsonschema.ValidationError, []any) {
	var first *jsonschema.ValidationError
	var want []any
	for _, c := range e.Causes {
		f := constFailure(c)
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
