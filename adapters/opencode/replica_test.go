package opencode

import (
	"path/filepath"
	"testing"
)

// TestDatabasePathFollowsOPENCODE_DB: the replica's events are read from
// the database the live server writes: opencode.db in the data folder, or
// the one OPENCODE_DB names (absolute, or relative to the data folder).
func TestDatabasePathFollowsOPENCODE_DB(t *testing.T) {
	home := t.TempDir()
	data := filepath.Join(home, ".local", "share", "opencode")
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, filepath.Join(data, "opencode.db")},
		{[]string{"OPENCODE_DB=/srv/oc/sessions.db"}, "/srv/oc/sessions.db"},
		{[]string{"OPENCODE_DB=mine.db"}, filepath.Join(data, "mine.db")},
		{[]string{"OPENCODE_DB=:memory:"}, ":memory:"},
	} {
		h := New(Config{Home: home, Env: c.env})
		if got := h.databasePath(); got != c.want {
			t.Errorf("env %q: databasePath %q, want %q", c.env, got, c.want)
		}
	}
}
