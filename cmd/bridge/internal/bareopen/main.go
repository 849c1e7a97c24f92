// Command bareopen is a benchmark baseline: a bare Go binary that opens a
// Bridge database with the same driver (storage.Open) and exits as soon as
// it is open. BenchmarkStartup compares `bridge serve` answering initialize
// against it.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/bridge-dev/bridge/storage"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: bareopen DBPATH")
		os.Exit(2)
	}
	db, err := storage.Open(context.Background(), os.Args[1], storage.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Exit with the database open, as a process that is killed does
	// (SQLite recovers nothing: nothing was written). Closing would time
	// the close too (a checkpoint with its fsync, and stopping the search
	// indexer), which bridge's side of BenchmarkStartup, ending when
	// initialize is answered, does not include: under I/O load from other
	// processes the close alone took 10-50 ms.
	_ = db
	os.Exit(0)
}
