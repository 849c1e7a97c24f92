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

// splitDefs returns the undecoded members of the bundle's "$defs". It only
// finds where each value starts and ends (a definition is decoded, and so
// checked, when it is first used): decoding the whole bundle with
// encoding/json took 1.4-2.3 ms, on the path of the first request.
func splitDefs(b []byte) (map[string]json.RawMessage, error) {
	sc := scanner{b: b}
	var defs map[string]json.RawMessage
	err := sc.object(func(key string) error {
		if key != "$defs" {
			return sc.skip()
		}
		defs = map[string]json.RawMessage{}
		return sc.object(func(name string) error {
			start := sc.i
			if err := sc.skip(); err != nil {
				return err
			}
			defs[name] = json.RawMessage(b[start:sc.i])
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if defs == nil {
		return nil, fmt.Errorf("no $defs")
	}
	return defs, nil
}

// scanner walks JSON text without decoding it.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\n' || s.b[s.i] == '\t' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", s.i, fmt.Sprintf(format, args...))
}

// object calls member for each member of the object at s.i, with s.i at
// the member's value; member must consume the value.
func (s *scanner) object(member func(key string) error) error {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return s.errorf("want an object")
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		start := s.i
		if err := s.str(); err != nil {
			return err
		}
		key, err := strconv.Unquote(string(s.b[start:s.i]))
		if err != nil {
			var k string
			if json.Unmarshal(s.b[start:s.i], &k) != nil {
				return s.errorf("bad member name")
			}
			key = k
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return s.errorf("want ':'")
		}
		s.i++
		s.ws()
		if err := member(key); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return s.errorf("unexpected end")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errorf("want ',' or '}'")
		}
	}
}

// str moves past the string at s.i.
func (s *scanner) str() error {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return s.errorf("want a string")
	}
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return nil
		}
	}
	return s.errorf("unterminated string")
}

// skip moves past the value at s.i.
func (s *scanner) skip() error {
	s.ws()
	depth := 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case '"':
			if err := s.str(); err != nil {
				return err
			}
		case '{', '[':
			depth++
			s.i++
		case '}', ']':
			if depth == 0 {
				return nil // the end of the enclosing value
			}
			depth--
			s.i++
		case ',':
			if depth == 0 {
				return nil
			}
			s.i++
		default:
			s.i++
		}
		if depth == 0 {
			// A scalar runs to the next delimiter.
			for s.i < len(s.b) && !strings.ContainsRune(",}] \n\t\r", rune(s.b[s.i])) {
				if s.b[s.i] == '"' || s.b[s.i] == '{' || s.b[s.i] == '[' {
					break
				}
				s.i++
			}
			return nil
		}
	}
	return s.errorf("unexpected end")
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
	bad := func(kw string) error { return fmt.Errorf("validate: %s: %s has an unexpected value", at, kw) }
	for _, kw := range sortedKeys(obj) {
		val := obj[kw]
		switch {
		case kw == "type":
			switch t := val.(type) {
			case string:
				n.types = []string{t}
			case []any:
				for _, x := range t {
					s, ok := x.(string)
					if !ok {
						return bad(kw)
					}
					n.types = append(n.types, s)
				}
			default:
				return bad(kw)
			}
		case kw == "const":
			n.hasConst, n.constVal = true, val
		case kw == "enum":
			list, ok := val.([]any)
			if !ok {
				return bad(kw)
			}
			n.enum = list
		case kw == "$ref":
			s, _ := val.(string)
			name, ok := strings.CutPrefix(s, "#/$defs/")
			if !ok || strings.Contains(name, "/") {
				return fmt.Errorf("validate: %s: $ref %q is not a definition of the bundle", at, s)
			}
			n.ref = name
		case kw == "properties":
			m, ok := val.(map[string]any)
			if !ok {
				return bad(kw)
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
			list, ok := val.([]any)
			if !ok {
				return bad(kw)
			}
			for _, x := range list {
				s, ok := x.(string)
				if !ok {
					return bad(kw)
				}
				n.required = append(n.required, s)
			}
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
			list, ok := val.([]any)
			if !ok || len(list) == 0 {
				return bad(kw)
			}
			for i, sv := range list {
				sub, err := c.compile(sv, at+"/oneOf/"+strconv.Itoa(i))
				if err != nil {
					return err
				}
				n.oneOf = append(n.oneOf, sub)
			}
		case kw == "minItems", kw == "maxItems", kw == "minLength", kw == "maxLength":
			num, ok := val.(json.Number)
			i, err := strconv.Atoi(string(num))
			if !ok || err != nil || i < 0 {
				return bad(kw)
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
		case kw == "minimum", kw == "maximum":
			num, ok := val.(json.Number)
			r, okr := new(big.Rat).SetString(string(num))
			if !ok || !okr {
				return bad(kw)
			}
			if kw == "minimum" {
				n.minimum = r
			} else {
				n.maximum = r
			}
		case annotation(kw), strings.HasPrefix(kw, "x-"):
		default:
			return fmt.Errorf("validate: %s: keyword %q is not supported by this validator", at, kw)
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
	case string:
		if n.minLength != nil || n.maxLength != nil {
			l := utf8.RuneCountInString(v)
			if n.minLength != nil && l < *n.minLength {
				errs = append(errs, &violation{kind: kMinLength, loc: clone(loc), gotN: l, wantN: *n.minLength})
			}
			if n.maxLength != nil && l > *n.maxLength {
				errs = append(errs, &violation{kind: kMaxLength, loc: clone(loc), gotN: l, wantN: *n.maxLength})
			}
		}
	case json.Number:
		if n.minimum != nil || n.maximum != nil {
			r, _ := new(big.Rat).SetString(string(v))
			if n.minimum != nil && r.Cmp(n.minimum) < 0 {
				errs = append(errs, &violation{kind: kMinimum, loc: clone(loc), gotR: r, wantR: n.minimum})
			}
			if n.maximum != nil && r.Cmp(n.maximum) > 0 {
				errs = append(errs, &violation{kind: kMaximum, loc: clone(loc), gotR: r, wantR: n.maximum})
			}
		}
	}
	if len(n.oneOf) > 0 {
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
				errs = append(errs, &violation{kind: kOneOf, loc: clone(loc), matched: []int{matched, i}})
				break
			}
			matched = i
		}
		if matched == -1 {
			errs = append(errs, &violation{kind: kOneOf, loc: clone(loc), causes: causes})
		}
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return &violation{kind: kGroup, loc: clone(loc), causes: errs}
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
