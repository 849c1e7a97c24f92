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
// BRIDGE_BENCH_DUMP_PAYLOAD bytes (1 KiB by default) each: the
// peak-heap-MB of whole against stream is the ratio; restore's is the
// restore's memory, which should not grow with the entries' number.
//
//	go test ./storage/postgres -run '^$' -bench DumpMemory -benchtime 3x
func BenchmarkDumpMemory(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("BRIDGE_BENCH_DUMP_ENTRIES")); err == nil && v > 0 {
		n = v
	}
	size := 1024
	if v, err := strconv.Atoi(os.Getenv("BRIDGE_BENCH_DUMP_PAYLOAD")); err == nil && v > 0 {
		size = v
	}
	db := open(b)
	storetest.BenchDump(b, db, n, size)
}
