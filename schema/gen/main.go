// Command gen writes Bridge's JSON Schema files (run by `go generate
// ./schema`), and the method table of the protocol document.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/bridge-dev/bridge/schema/generate"
)

func main() {
	out := flag.String("out", "json", "directory to write the schema files into")
	doc := flag.String("doc", "", "a Markdown file whose method table (between its methods markers) to rewrite")
	flag.Parse()
	if err := generate.Generate(*out); err != nil {
		fmt.Fprintln(os.Stderr, "schema/gen:", err)
		os.Exit(1)
	}
	if *doc != "" {
		if err := generate.WriteMethodsDoc(*doc); err != nil {
			fmt.Fprintln(os.Stderr, "schema/gen:", err)
			os.Exit(1)
		}
	}
}
