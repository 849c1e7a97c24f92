package pgtest

import (
	"fmt"
	"os"
)

// Stop drops the templates Copy made and stops and removes the cluster
// this process started, if any: for a test binary whose TestMain does more
// than Main does (call it after m.Run).
func Stop() {
	dropTemplates()
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
		cluster = nil
	}
}
