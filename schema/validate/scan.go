package validate

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

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
