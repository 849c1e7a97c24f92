// Command bareopen is a benchmark baseline: a bare Go binary that opens a
// Bridge database with the same driver and exits. BenchmarkStartup compares
// `bridge serve` answering initialize against it.
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
	db.Close()
}
