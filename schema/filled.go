package schema

import (
	"encoding/json"
	"reflect"
	"strings"
)

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// filled returns a copy of the struct v in which every required (not
// omitempty, not omitzero) slice or map field that is nil is made empty, so
// that it marshals as [] or {} instead of null, which the schema refuses. A
// nil json.RawMessage becomes {} (payloads are objects).
func filled[T any](v T) T {
	p := reflect.New(reflect.TypeOf(v))
	p.Elem().Set(reflect.ValueOf(v))
	s := p.Elem()
	t := s.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() || f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" || strings.Contains(tag, ",omitempty") || strings.Contains(tag, ",omitzero") {
			continue
		}
		fv := s.Field(i)
		switch {
		case f.Type == rawMessageType:
			if len(fv.Bytes()) == 0 {
				fv.Set(reflect.ValueOf(json.RawMessage("{}")))
			}
		case f.Type.Kind() == reflect.Slice && fv.IsNil():
			fv.Set(reflect.MakeSlice(f.Type, 0, 0))
		case f.Type.Kind() == reflect.Map && fv.IsNil():
			fv.Set(reflect.MakeMap(f.Type))
		}
	}
	return s.Interface().(T)
}
