//go:build unix

package lease

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// TestOwnerGone: only a holder named on this machine whose process no
// longer runs is gone; this process, a running one, another machine's
// holder and a name of another spelling are not (their leases lapse by
// time).
func TestOwnerGone(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	dead := cmd.Process.Pid
	cases := []struct {
		owner string
		gone  bool
	}{
		{fmt.Sprintf("%s.%d.abcd", ownerHost(), dead), true},
		{ProcessOwner(), false},
		{fmt.Sprintf("%s.%d.abcd", ownerHost(), os.Getppid()), false},
		{fmt.Sprintf("another-machine-%s.%d.abcd", ownerHost(), dead), false},
		{"died-without-releasing", false},
		{fmt.Sprintf("%s.notapid.abcd", ownerHost()), false},
	}
	for _, c := range cases {
		if got := ownerGone(c.owner); got != c.gone {
			t.Errorf("ownerGone(%q) = %v, want %v", c.owner, got, c.gone)
		}
	}
}
