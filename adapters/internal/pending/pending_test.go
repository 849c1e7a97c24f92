package pending

import "testing"

func TestSet(t *testing.T) {
	var s Set
	called := 0
	if !s.Add("a", func() { called++ }) {
		t.Fatal("first Add of a refused")
	}
	if s.Add("a", func() { called += 10 }) {
		t.Fatal("a second Add of an open id was accepted")
	}
	s.Cancel("a")
	s.Cancel("a")
	if called != 1 {
		t.Fatalf("cancel called %d times, want once (the first Add's)", called)
	}
	s.Add("b", func() { called++ })
	s.Remove("b")
	s.Cancel("b")
	if called != 1 {
		t.Fatal("a removed request was cancelled")
	}
}
