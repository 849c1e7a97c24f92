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
