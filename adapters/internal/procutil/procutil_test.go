package procutil

import (
	"strings"
	"testing"
)

func TestTailKeepsTheEnd(t *testing.T) {
	var tl Tail
	tl.Write([]byte(strings.Repeat("a", TailSize)))
	tl.Write([]byte("the end"))
	got := tl.String()
	if len(got) != TailSize || !strings.HasSuffix(got, "the end") || strings.Count(got, "a") != TailSize-len("the end") {
		t.Fatalf("tail of %d bytes ending %q", len(got), got[len(got)-10:])
	}
}

func TestReadLines(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // longer than the reader's buffer
	in := "first\n\n  second  \n" + long + "\nlast without newline"
	var got []string
	if err := ReadLines(strings.NewReader(in), func(l []byte) { got = append(got, string(l)) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0] != "first" || got[1] != "second" || got[2] != long || got[3] != "last without newline" {
		t.Fatalf("lines %d: %q %q … %q", len(got), got[0], got[1], got[len(got)-1])
	}
}

func TestReadLinesRefusesAnEndlessLine(t *testing.T) {
	r := strings.NewReader(strings.Repeat("y", MaxLine+(128<<10)))
	if err := ReadLines(r, func([]byte) { t.Fatal("no line expected") }); err != ErrLineTooLong {
		t.Fatalf("err %v, want ErrLineTooLong", err)
	}
}
