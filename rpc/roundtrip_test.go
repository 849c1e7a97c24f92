package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/schema"
)

// TestParamsRoundTrip sends, for every client request of schema.Methods(),
// params with every field set (to a value the contract allows) through the
// server, and checks the backend received exactly those params: no field
// is dropped, renamed or altered between the wire and the service.
//
// It watches the server's call into the backend, so a new row needs no
// method on the test's fake backend.
func TestParamsRoundTrip(t *testing.T) {
	defs := bundleDefs(t)
	var mu sync.Mutex
	var received []any
	saved := callBackend
	callBackend = func(_ context.Context, m *method, _ Backend, p any) (any, error) {
		mu.Lock()
		received = append(received, p)
		mu.Unlock()
		if m.Result == nil {
			return nil, nil
		}
		return reflect.New(reflect.TypeOf(m.Result)).Elem().Interface(), nil
	}
	t.Cleanup(func() { callBackend = saved })
	got := func() []any {
		mu.Lock()
		defer mu.Unlock()
		return append([]any(nil), received...)
	}
	c := startServer(t, newFake(), nil)
	c.initialize()
	n := 0
	for _, m := range schema.Methods() {
		if m.Call == nil {
			continue
		}
		n++
		typ := reflect.TypeOf(m.Params)
		f := filler{defs: defs}
		v := reflect.New(typ).Elem()
		f.fill(v, defs[typ.Name()], typ.Name())
		if unset := zeroLeaves(v, typ.Name()); len(unset) > 0 {
			t.Fatalf("%s: the test left fields unset: %v", m.Name, unset)
		}
		before := len(got())
		c.MustCall(m.Name, v.Interface(), nil)
		calls := got()
		if len(calls) != before+1 {
			t.Fatalf("%s: backend called %d times, want once", m.Name, len(calls)-before)
		}
		if !reflect.DeepEqual(calls[before], v.Interface()) {
			t.Errorf("%s: backend received\n %+v\nsent\n %+v", m.Name, calls[before], v.Interface())
		}
	}
	if n == 0 {
		t.Fatal("no client requests in schema.Methods()")
	}
}

// bundleDefs returns the $defs of the generated JSON Schema bundle.
func bundleDefs(t *testing.T) map[string]map[string]any {
	t.Helper()
	var buf bytes.Buffer
	if err := schema.WriteBundle(&buf); err != nil {
		t.Fatal(err)
	}
	var b struct {
		Defs map[string]map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	return b.Defs
}

// filler sets every field of a value to a non-zero value its schema
// allows: the first enum or the const where the schema has one.
type filler struct {
	defs map[string]map[string]any
	n    int
}

// resolve follows a $ref.
func (f *filler) resolve(s map[string]any) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		return f.defs[strings.TrimPrefix(ref, "#/$defs/")]
	}
	return s
}

var timeType = reflect.TypeFor[time.Time]()

func (f *filler) fill(v reflect.Value, s map[string]any, path string) {
	s = f.resolve(s)
	if s == nil {
		s = map[string]any{}
	}
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
		return
	}
	if _, ok := v.Addr().Interface().(json.Unmarshaler); ok {
		// A type with its own encoding: decode a sample of its schema.
		sample := `"v"`
		if one, ok := s["oneOf"].([]any); ok && len(one) > 0 {
			if b, ok := one[0].(map[string]any); ok && b["type"] == "integer" {
				sample = "7"
			}
		}
		if err := json.Unmarshal([]byte(sample), v.Addr().Interface()); err != nil {
			panic(fmt.Sprintf("%s: %v", path, err))
		}
		return
	}
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		v.Set(reflect.ValueOf(json.RawMessage(`{"k":1}`)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		if e, ok := s["enum"].([]any); ok && len(e) > 0 {
			v.SetString(fmt.Sprint(e[0]))
		} else if c, ok := s["const"]; ok {
			v.SetString(fmt.Sprint(c))
		} else {
			f.n++
			v.SetString(fmt.Sprintf("v%d", f.n))
		}
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f.n++
		v.SetInt(int64(f.n))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		f.fill(v.Elem(), s, path)
	case reflect.Slice:
		items, _ := s["items"].(map[string]any)
		items = f.resolve(items)
		branches, _ := items["oneOf"].([]any)
		if len(branches) == 0 {
			branches = []any{items}
		}
		// One element per branch of a oneOf, so that each branch's fields
		// are set somewhere.
		out := reflect.MakeSlice(v.Type(), len(branches), len(branches))
		for i, b := range branches {
			bs, _ := b.(map[string]any)
			f.fill(out.Index(i), bs, fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(out)
	case reflect.Map:
		add, _ := s["additionalProperties"].(map[string]any)
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		f.fill(e, add, path+".k")
		m.SetMapIndex(reflect.ValueOf("k").Convert(v.Type().Key()), e)
		v.Set(m)
	case reflect.Struct:
		props, _ := s["properties"].(map[string]any)
		f.fillStruct(v, s, props, path)
	default:
		panic(fmt.Sprintf("%s: no filler for %s", path, v.Type()))
	}
}

// fillStruct fills the fields of v named in props (embedded structs are
// flattened, as in JSON); with no props (no schema), every field.
func (f *filler) fillStruct(v reflect.Value, s, props map[string]any, path string) {
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		if sf.Anonymous {
			f.fillStruct(v.Field(i), s, props, path)
			continue
		}
		name := jsonName(sf)
		if name == "-" {
			continue
		}
		p, ok := props[name].(map[string]any)
		if props != nil && !ok {
			continue // not in this branch of a oneOf
		}
		f.fill(v.Field(i), p, path+"."+name)
	}
}

func jsonName(sf reflect.StructField) string {
	name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
	if name == "" {
		return sf.Name
	}
	return name
}

// zeroLeaves lists the fields of v (by JSON path, elements of a list
// merged) that are zero everywhere they occur.
func zeroLeaves(v reflect.Value, path string) []string {
	set := map[string]bool{}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		if _, ok := set[path]; !ok {
			set[path] = false
		}
		if !v.IsZero() {
			set[path] = true
		}
		if _, ok := v.Addr().Interface().(json.Unmarshaler); ok || v.Type() == timeType {
			return
		}
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem(), path)
			}
		case reflect.Slice:
			if v.Type() == reflect.TypeFor[json.RawMessage]() {
				return
			}
			for i := range v.Len() {
				walk(v.Index(i), path+"[]")
			}
		case reflect.Struct:
			for i := range v.NumField() {
				sf := v.Type().Field(i)
				if !sf.IsExported() {
					continue
				}
				if sf.Anonymous {
					walk(v.Field(i), path)
					continue
				}
				walk(v.Field(i), path+"."+jsonName(sf))
			}
		}
	}
	walk(v, path)
	var out []string
	for p, ok := range set {
		if !ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}
