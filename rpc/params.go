package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/bridge-dev/bridge/schema/validate"
)

var null = []byte("null")

// decodeParams decodes raw into a new P (see decodeInto).
func decodeParams[P any](method string, raw json.RawMessage) (*P, error) {
	p := new(P)
	if err := decodeInto(method, raw, p); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeInto validates raw against the JSON Schema of p's type (a pointer
// to a contract type) and decodes it into p, answering -32602 with a
// message that names the field at fault. Absent params count as an empty
// object; members the contract does not know are ignored.
func decodeInto(method string, raw json.RawMessage, p any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, null) {
		raw = []byte("{}")
	}
	if err := validate.JSON(validate.DefName(p), raw); err != nil {
		var ve *validate.Error
		if errors.As(err, &ve) {
			return invalidParams(ve.Field, "%s: %s", method, ve.Message)
		}
		return fmt.Errorf("%s: validate params: %w", method, err)
	}
	if err := json.Unmarshal(raw, p); err != nil {
		// The schema allowed what Go cannot hold (an integer out of range).
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
