package pgtest

import (
	"fmt"
	"os"
)

// Stop stops and removes the cluster this process started, if any: for a
// test binary whose TestMain does more than Main does (call it after
// m.Run).
func Stop() {
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
		cluster = nil
	}
}
