// Command gen writes Bridge's JSON Schema files (run by `go generate
// ./schema`). It only takes the output directory.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/bridge-dev/bridge/schema/generate"
)

func main() {
	out := flag.String("out", "json", "directory to write the schema files into")
	flag.Parse()
	if err := generate.Generate(*out); err != nil {
		fmt.Fprintln(os.Stderr, "schema/gen:", err)
		os.Exit(1)
	}
}
