package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// node is one compiled subschema of the bundle. The bundle is generated
// from the contract's Go types and uses a small part of JSON Schema 2020-12;
// compile refuses any keyword outside that part (a test compiles every
// definition, so a generator change that needs more fails there), and a
// test checks this validator against a complete 2020-12 implementation.
type node struct {
	boolean    *bool // a boolean schema (true or false)
	types      []string
	hasConst   bool
	constVal   any
	enum       []any
	ref        string // definition name of a "$ref"
	refNode    *node
	props      map[string]*node
	required   []string
	additional *node // nil when absent
	items      *node
	minItems   *int
	maxItems   *int
	minLength  *int
	maxLength  *int
	minimum    *big.Rat
	maximum    *big.Rat
	oneOf      []*node
}

// annotation reports whether kw is a keyword that does not constrain a
// value (format and contentEncoding are annotations in 2020-12 unless
// assertion is asked for, and the validator never asks). A switch, not a
// map: nothing to build before main.
func annotation(kw string) bool {
	switch kw {
	case "description", "title", "$comment", "format", "contentEncoding", "contentMediaType", "examples",
		"default", "deprecated", "readOnly", "writeOnly", "$schema", "$defs":
		return true
	}
	return false
}

// compiler compiles the bundle's definitions on demand.
type compiler struct {
	raw  map[string]json.RawMessage // the bundle's $defs, undecoded
	defs map[string]*node
}

func newCompiler(bundle []byte) (*compiler, error) {
	defs, err := splitDefs(bundle)
	if err != nil {
		return nil, fmt.Errorf("validate: read the schema bundle: %w", err)
	}
	return &compiler{raw: defs, defs: map[string]*node{}}, nil
}

// def returns the compiled definition name, compiling it and every
// definition it refers to.
func (c *compiler) def(name string) (*node, error) {
	if n, ok := c.defs[name]; ok {
		return n, nil
	}
	raw, ok := c.raw[name]
	if !ok {
		return nil, fmt.Errorf("validate: the schema bundle has no definition %q", name)
	}
	n := &node{}
	c.defs[name] = n // before compiling: definitions may refer to themselves
	v, err := decode(raw)
	if err != nil {
		delete(c.defs, name)
		return nil, fmt.Errorf("validate: definition %s: %w", name, err)
	}
	if err := c.compileInto(n, v, "#/$defs/"+name); err != nil {
		delete(c.defs, name)
		return nil, err
	}
	return n, nil
}

func (c *compiler) compile(v any, at string) (*node, error) {
	n := &node{}
	if err := c.compileInto(n, v, at); err != nil {
		return nil, err
	}
	return n, nil
}

func (c *compiler) compileInto(n *node, v any, at string) error {
	if b, ok := v.(bool); ok {
		n.boolean = &b
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("validate: %s: a schema must be an object or a boolean", at)
	}
	for _, kw := range sortedKeys(obj) {
		if err := c.keyword(n, kw, obj[kw], at); err != nil {
			return err
		}
	}
	if n.ref != "" {
		target, err := c.def(n.ref)
		if err != nil {
			return err
		}
		n.refNode = target
	}
	return nil
}

// keyword compiles keyword kw of the schema at at, with value val, into n.
func (c *compiler) keyword(n *node, kw string, val any, at string) error {
	bad := fmt.Errorf("validate: %s: %s has an unexpected value", at, kw)
	ok := true
	switch {
	case kw == "type":
		n.types, ok = typesOf(val)
	case kw == "const":
		n.hasConst, n.constVal = true, val
	case kw == "enum":
		n.enum, ok = val.([]any)
	case kw == "$ref":
		s, _ := val.(string)
		name, ok := strings.CutPrefix(s, "#/$defs/")
		if !ok || strings.Contains(name, "/") {
			return fmt.Errorf("validate: %s: $ref %q is not a definition of the bundle", at, s)
		}
		n.ref = name
	case kw == "properties":
		m, isMap := val.(map[string]any)
		if !isMap {
			return bad
		}
		n.props = make(map[string]*node, len(m))
		for p, sv := range m {
			sub, err := c.compile(sv, at+"/properties/"+p)
			if err != nil {
				return err
			}
			n.props[p] = sub
		}
	case kw == "required":
		n.required, ok = stringsOf(val)
	case kw == "additionalProperties", kw == "items":
		sub, err := c.compile(val, at+"/"+kw)
		if err != nil {
			return err
		}
		if kw == "items" {
			n.items = sub
		} else {
			n.additional = sub
		}
	case kw == "oneOf":
		list, isList := val.([]any)
		if !isList || len(list) == 0 {
			return bad
		}
		for i, sv := range list {
			sub, err := c.compile(sv, at+"/oneOf/"+strconv.Itoa(i))
			if err != nil {
				return err
			}
			n.oneOf = append(n.oneOf, sub)
		}
	case kw == "minItems", kw == "maxItems", kw == "minLength", kw == "maxLength":
		ok = n.setCount(kw, val)
	case kw == "minimum", kw == "maximum":
		ok = n.setBound(kw, val)
	case annotation(kw), strings.HasPrefix(kw, "x-"):
	default:
		return fmt.Errorf("validate: %s: keyword %q is not supported by this validator", at, kw)
	}
	if !ok {
		return bad
	}
	return nil
}

// typesOf reads a "type" value: one name or a list of names.
func typesOf(val any) ([]string, bool) {
	switch t := val.(type) {
	case string:
		return []string{t}, true
	case []any:
		return stringsOf(t)
	}
	return nil, false
}

// stringsOf reads a list of strings.
func stringsOf(val any) ([]string, bool) {
	list, ok := val.([]any)
	if !ok {
		return nil, false
	}
	var out []string
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// setCount sets the count limit kw (minItems, maxItems, minLength,
// maxLength) from a non-negative integer.
func (n *node) setCount(kw string, val any) bool {
	num, ok := val.(json.Number)
	i, err := strconv.Atoi(string(num))
	if !ok || err != nil || i < 0 {
		return false
	}
	switch kw {
	case "minItems":
		n.minItems = &i
	case "maxItems":
		n.maxItems = &i
	case "minLength":
		n.minLength = &i
	default:
		n.maxLength = &i
	}
	return true
}

// setBound sets minimum or maximum from a number, kept exact.
func (n *node) setBound(kw string, val any) bool {
	num, ok := val.(json.Number)
	r, okr := new(big.Rat).SetString(string(num))
	if !ok || !okr {
		return false
	}
	if kw == "minimum" {
		n.minimum = r
	} else {
		n.maximum = r
	}
	return true
}

// decode reads one JSON value the way the validator sees instances:
// numbers stay exact (json.Number), and nothing may follow the value.
func decode(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("invalid character after top-level value")
	}
	return v, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The violation kinds the validator reports.
const (
	kFalse = iota
	kType
	kConst
	kEnum
	kRequired
	kAdditional
	kMinItems
	kMaxItems
	kMinLength
	kMaxLength
	kMinimum
	kMaximum
	kOneOf
	kRef
	kGroup
)

// violation is one failed check at an instance location; a oneOf,
// a $ref or several failures of one subschema hold their causes.
type violation struct {
	kind     int
	loc      []string
	causes   []*violation
	got      any      // const, enum: the value
	want     any      // const: the wanted value
	wantList []any    // enum
	gotType  string   // type
	types    []string // type: the wanted types
	names    []string // required: missing; additional: the unknown members
	gotN     int
	wantN    int
	gotR     *big.Rat
	wantR    *big.Rat
	matched  []int // oneOf: two subschemas that both matched
}

// validate checks v against n; it returns nil when v is valid. The checks
// run in the order of the reference implementation, so that the first
// cause is the same violation.
func (n *node) validate(v any, loc []string) *violation {
	if n.boolean != nil {
		if *n.boolean {
			return nil
		}
		return &violation{kind: kFalse, loc: clone(loc)}
	}
	t := typeOf(v)
	if len(n.types) > 0 && !typeMatches(n.types, t, v) {
		return &violation{kind: kType, loc: clone(loc), gotType: t, types: n.types}
	}
	if n.hasConst && !equal(v, n.constVal) {
		return &violation{kind: kConst, loc: clone(loc), got: v, want: n.constVal}
	}
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if equal(v, e) {
				found = true
				break
			}
		}
		if !found {
			return &violation{kind: kEnum, loc: clone(loc), got: v, wantList: n.enum}
		}
	}
	var errs []*violation
	if n.refNode != nil {
		if e := n.refNode.validate(v, loc); e != nil {
			r := &violation{kind: kRef, loc: clone(loc)}
			if e.kind == kGroup {
				r.causes = e.causes
			} else {
				r.causes = []*violation{e}
			}
			errs = append(errs, r)
		}
	}
	switch v := v.(type) {
	case map[string]any:
		errs = n.object(v, loc, errs)
	case []any:
		errs = n.array(v, loc, errs)
	case string:
		errs = n.str(v, loc, errs)
	case json.Number:
		errs = n.number(v, loc, errs)
	}
	if len(n.oneOf) > 0 {
		errs = n.one(v, loc, errs)
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return &violation{kind: kGroup, loc: clone(loc), causes: errs}
}

// array adds to errs the violations of the array v's own keywords.
func (n *node) array(v []any, loc []string, errs []*violation) []*violation {
	if n.minItems != nil && len(v) < *n.minItems {
		errs = append(errs, &violation{kind: kMinItems, loc: clone(loc), gotN: len(v), wantN: *n.minItems})
	}
	if n.maxItems != nil && len(v) > *n.maxItems {
		errs = append(errs, &violation{kind: kMaxItems, loc: clone(loc), gotN: len(v), wantN: *n.maxItems})
	}
	if n.items != nil {
		for i, item := range v {
			if e := n.items.validate(item, append(loc, strconv.Itoa(i))); e != nil {
				errs = append(errs, e)
			}
		}
	}
	return errs
}

// str adds to errs the violations of the string v's length limits,
// counted in code points.
func (n *node) str(v string, loc []string, errs []*violation) []*violation {
	if n.minLength == nil && n.maxLength == nil {
		return errs
	}
	l := utf8.RuneCountInString(v)
	if n.minLength != nil && l < *n.minLength {
		errs = append(errs, &violation{kind: kMinLength, loc: clone(loc), gotN: l, wantN: *n.minLength})
	}
	if n.maxLength != nil && l > *n.maxLength {
		errs = append(errs, &violation{kind: kMaxLength, loc: clone(loc), gotN: l, wantN: *n.maxLength})
	}
	return errs
}

// number adds to errs the violations of the number v's bounds, compared
// exactly.
func (n *node) number(v json.Number, loc []string, errs []*violation) []*violation {
	if n.minimum == nil && n.maximum == nil {
		return errs
	}
	r, _ := new(big.Rat).SetString(string(v))
	if n.minimum != nil && r.Cmp(n.minimum) < 0 {
		errs = append(errs, &violation{kind: kMinimum, loc: clone(loc), gotR: r, wantR: n.minimum})
	}
	if n.maximum != nil && r.Cmp(n.maximum) > 0 {
		errs = append(errs, &violation{kind: kMaximum, loc: clone(loc), gotR: r, wantR: n.maximum})
	}
	return errs
}

// one adds to errs a oneOf violation unless exactly one branch matches v:
// with no match the causes are every branch's, with two the two matched.
func (n *node) one(v any, loc []string, errs []*violation) []*violation {
	matched := -1
	var causes []*violation
	for i, sub := range n.oneOf {
		if e := sub.validate(v, loc); e != nil {
			if matched == -1 {
				causes = append(causes, e)
			}
			continue
		}
		if matched != -1 {
			return append(errs, &violation{kind: kOneOf, loc: clone(loc), matched: []int{matched, i}})
		}
		matched = i
	}
	if matched == -1 {
		errs = append(errs, &violation{kind: kOneOf, loc: clone(loc), causes: causes})
	}
	return errs
}

// object checks an object's members: required, then each member in name
// order (properties, else additionalProperties).
func (n *node) object(obj map[string]any, loc []string, errs []*violation) []*violation {
	var missing []string
	for _, r := range n.required {
		if _, ok := obj[r]; !ok {
			missing = append(missing, r)
		}
	}
	if missing != nil {
		errs = append(errs, &violation{kind: kRequired, loc: clone(loc), names: missing})
	}
	if n.props == nil && n.additional == nil {
		return errs
	}
	var unknown []string
	for _, name := range sortedKeys(obj) {
		sub, ok := n.props[name]
		if !ok {
			sub = n.additional
		}
		if sub == nil {
			continue
		}
		if sub.boolean != nil && !*sub.boolean && !ok {
			unknown = append(unknown, name)
			continue
		}
		if e := sub.validate(obj[name], append(loc, name)); e != nil {
			errs = append(errs, e)
		}
	}
	if unknown != nil {
		errs = append(errs, &violation{kind: kAdditional, loc: clone(loc), names: unknown})
	}
	return errs
}

func clone(loc []string) []string { return append([]string(nil), loc...) }

// typeOf names a decoded JSON value's type; every number is "number".
func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "invalid"
}

func typeMatches(want []string, got string, v any) bool {
	for _, w := range want {
		if w == got || (w == "integer" && got == "number" && isInteger(v)) {
			return true
		}
	}
	return false
}

func isInteger(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	r, ok := new(big.Rat).SetString(string(n))
	return ok && r.IsInt()
}

// equal is JSON equality: numbers by value, objects by members.
func equal(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		ra, oka := new(big.Rat).SetString(string(a))
		rb, okb := new(big.Rat).SetString(string(bn))
		return oka && okb && ra.Cmp(rb) == 0
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !equal(av, bv) {
				return false
			}
		}
		return true
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !equal(a[i], bl[i]) {
				return false
			}
		}
		return true
	}
	switch b.(type) {
	case json.Number, map[string]any, []any:
		return false
	}
	return a == b
}
