// Package jsonstream holds the few helpers Bridge's streaming JSON readers
// (its own export format and OpenCode's export) share on top of
// encoding/json's token API, so a large document is read one value at a
// time instead of whole.
package jsonstream

import (
	"encoding/json"
	"fmt"
)

// ExpectDelim reads the next token and fails unless it is d.
func ExpectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("found %v where %v was expected", tok, d)
	}
	return nil
}

// EachElement calls fn once per element of the JSON array the decoder is
// at; fn decodes (or skips) the element.
func EachElement(dec *json.Decoder, fn func() error) error {
	if err := ExpectDelim(dec, '['); err != nil {
		return err
	}
	for dec.More() {
		if err := fn(); err != nil {
			return err
		}
	}
	return ExpectDelim(dec, ']')
}

// SkipValue reads past the value the decoder is at, one token at a time,
// without holding it in memory.
func SkipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
