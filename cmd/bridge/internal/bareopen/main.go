// Command bareopen is a benchmark baseline: a bare Go binary that opens a
// Bridge database with the same driver (storage.Open), prints "open" and
// closes it. BenchmarkStartup compares `bridge serve` answering initialize
// against the time to that line.
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
	// Tell the benchmark the database is open, then close it: the
	// benchmark stops its clock at this line, as it does when bridge
	// answers initialize, and closes both outside the time measured (a
	// close runs a checkpoint with its fsync, which under I/O load from
	// other processes took 10-50 ms).
	fmt.Println("open")
	db.Close()
}
