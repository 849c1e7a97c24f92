package storage

import "testing"

// TestJumpLenFollowsTheRule checks the closed form of the jump length
// against the rule itself (an entry at depth d jumps to its parent's jump
// target's target when the parent's two jumps span equal depths, else to its
// parent), depth by depth along one chain.
func TestJumpLenFollowsTheRule(t *testing.T) {
	const n = 1 << 17
	target := make([]int64, n) // depth of the jump target, by depth
	for d := int64(1); d < n; d++ {
		p := d - 1
		j := target[p]
		if p-j == j-target[j] {
			target[d] = target[j]
		} else {
			target[d] = p
		}
	}
	for d := int64(0); d < n; d++ {
		if got := jumpLen(d); got != d-target[d] {
			t.Fatalf("jumpLen(%d) = %d, want %d", d, got, d-target[d])
		}
	}
}
