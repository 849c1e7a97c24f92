package rpc

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// A params type's required members are those whose json tag has neither
// omitempty nor omitzero (the schema package's rule). shape records them,
// recursively, for one Go type; it is computed once per type.
type shape struct {
	fields []fieldShape // for a struct
	elem   *shape       // for a slice, an array or a map's values
}

type fieldShape struct {
	name     string
	required bool
	sub      *shape
}

var shapes sync.Map // reflect.Type -> *shape (nil when nothing is required)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// shapeOf returns t's shape, or nil when t requires nothing anywhere.
func shapeOf(t reflect.Type) *shape {
	if v, ok := shapes.Load(t); ok {
		return v.(*shape)
	}
	sh := buildShape(t, map[reflect.Type]bool{})
	shapes.Store(t, sh)
	return sh
}

func buildShape(t reflect.Type, seen map[reflect.Type]bool) *shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if seen[t] || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil // decoded by its own rules; a leaf here
	}
	seen[t] = true
	defer delete(seen, t)
	switch t.Kind() {
	case reflect.Struct:
		var sh shape
		collectFields(t, seen, &sh)
		if len(sh.fields) == 0 {
			return nil
		}
		return &sh
	case reflect.Slice, reflect.Array, reflect.Map:
		if e := buildShape(t.Elem(), seen); e != nil {
			return &shape{elem: e}
		}
	}
	return nil
}

// collectFields adds t's json members to sh, flattening untagged embedded
// structs as encoding/json does.
func collectFields(t reflect.Type, seen map[reflect.Type]bool, sh *shape) {
	for f := range t.Fields() {
		tag, hasTag := f.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectFields(ft, seen, sh)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		required := hasTag && !hasOpt(opts, "omitempty") && !hasOpt(opts, "omitzero")
		sub := buildShape(f.Type, seen)
		if required || sub != nil {
			sh.fields = append(sh.fields, fieldShape{name: name, required: required, sub: sub})
		}
	}
}

func hasOpt(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

var null = []byte("null")

// checkRequired reports the first required member missing from raw, as a
// dotted path ("content[1].type"). Values of the wrong JSON type are left
// for the decoder to report.
func checkRequired(sh *shape, raw json.RawMessage, path string) string {
	if sh == nil || len(raw) == 0 || bytes.Equal(raw, null) {
		return ""
	}
	if sh.elem != nil {
		switch raw[0] {
		case '[':
			var items []json.RawMessage
			if json.Unmarshal(raw, &items) != nil {
				return ""
			}
			for i, it := range items {
				if m := checkRequired(sh.elem, it, path+"["+strconv.Itoa(i)+"]"); m != "" {
					return m
				}
			}
		case '{':
			var items map[string]json.RawMessage
			if json.Unmarshal(raw, &items) != nil {
				return ""
			}
			for k, it := range items {
				if m := checkRequired(sh.elem, it, join(path, k)); m != "" {
					return m
				}
			}
		}
		return ""
	}
	if raw[0] != '{' {
		return ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return ""
	}
	for _, f := range sh.fields {
		v, ok := obj[f.name]
		if f.required && (!ok || bytes.Equal(v, null)) {
			return join(path, f.name)
		}
		if ok && f.sub != nil {
			if m := checkRequired(f.sub, v, join(path, f.name)); m != "" {
				return m
			}
		}
	}
	return ""
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// decodeParams decodes raw into a new P (see decodeInto).
func decodeParams[P any](method string, raw json.RawMessage) (*P, error) {
	p := new(P)
	if err := decodeInto(method, raw, p); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeInto decodes raw into p (a pointer), answering -32602 with a
// message that names the field when a required member is missing or a
// value has the wrong type. Absent params count as an empty object; members
// p does not know are ignored.
func decodeInto(method string, raw json.RawMessage, p any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, null) {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return invalidParams("", "%s: params must be an object", method)
	}
	if missing := checkRequired(shapeOf(reflect.TypeOf(p).Elem()), raw, ""); missing != "" {
		return invalidParams(missing, "%s: missing required field %q", method, missing)
	}
	if err := json.Unmarshal(raw, p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return invalidParams(te.Field, "%s: field %q must be %s, not %s", method, te.Field, jsonKind(te.Type), te.Value)
		}
		return invalidParams("", "%s: invalid params: %s", method, strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// jsonKind names the JSON type that decodes into t.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return fmt.Sprintf("a %s", t)
}
