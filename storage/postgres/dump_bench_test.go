package postgres_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/bridge-dev/bridge/core/storetest"
)

// BenchmarkDumpMemory compares the memory of Dump (the session whole) and
// DumpStream (a part at a time, as bridge store copy reads a session) on
// one session of BRIDGE_BENCH_DUMP_ENTRIES entries (20,000 by default) of
// 1 KiB each: the peak-heap-MB of whole against stream is the ratio.
//
//	go test ./storage/postgres -run '^$' -bench DumpMemory -benchtime 3x
func BenchmarkDumpMemory(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("BRIDGE_BENCH_DUMP_ENTRIES")); err == nil && v > 0 {
		n = v
	}
	db := open(b)
	storetest.BenchDump(b, db, n, 1024)
}
