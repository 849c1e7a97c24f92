package jsonstream

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestReadsAnArrayAndSkipsValues(t *testing.T) {
	dec := json.NewDecoder(strings.NewReader(`{"skip":{"a":[1,{"b":2}],"c":"}"},"keep":[{"n":1},{"n":2}]}`))
	if err := ExpectDelim(dec, '{'); err != nil {
		t.Fatal(err)
	}
	var got []int
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		switch tok {
		case "skip":
			if err := SkipValue(dec); err != nil {
				t.Fatal(err)
			}
		case "keep":
			err := EachElement(dec, func() error {
				var v struct{ N int }
				if err := dec.Decode(&v); err != nil {
					return err
				}
				got = append(got, v.N)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ExpectDelim(dec, '}'); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("elements: %v", got)
	}
}

func TestExpectDelimSaysWhatItFound(t *testing.T) {
	dec := json.NewDecoder(strings.NewReader(`["x"]`))
	err := ExpectDelim(dec, '{')
	if err == nil || !strings.Contains(err.Error(), "found [ where { was expected") {
		t.Fatalf("err = %v", err)
	}
	if err := EachElement(json.NewDecoder(strings.NewReader(`{}`)), func() error { return nil }); err == nil {
		t.Fatal("EachElement accepted an object")
	}
	if err := SkipValue(json.NewDecoder(strings.NewReader(`[1,`))); err == nil {
		t.Fatal("SkipValue accepted a truncated array")
	}
}
