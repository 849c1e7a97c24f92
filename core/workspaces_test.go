package core

import (
	"reflect"
	"testing"
)

func TestWorkspacesOfIsDistinctSortedAndSkipsEmpty(t *testing.T) {
	got := WorkspacesOf([]string{"/b", "", "/a", "/b", "/a/x"})
	want := []Workspace{{Path: "/a"}, {Path: "/a/x"}, {Path: "/b"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := WorkspacesOf(nil); len(got) != 0 {
		t.Fatalf("no paths gave %v", got)
	}
}
