package validate

import (
	"testing"

	"github.com/bridge-dev/bridge/schema"
)

// BenchmarkFirstUse: what the first request pays, reading the bundle's
// definitions and compiling initialize's params.
func BenchmarkFirstUse(b *testing.B) {
	for i := 0; i < b.N; i++ {
		c, err := newCompiler(schema.Bundle())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.def("InitializeParams"); err != nil {
			b.Fatal(err)
		}
	}
}
