package codex

import (
	"strconv"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/servicetest"
)

// BenchmarkEventToUpdate measures the whole path Bridge adds per Codex
// event: a notification written by the fake app-server -> decoded and
// mapped -> appended to the SQLite record -> session/update handed to the
// client. 10,000 notifications per turn, 50 µs apart; each item id ends
// with the time it was written. The fake is wrapped in AllCapable: the
// real probe asks for a version and protocol schema the fake does not give.
func BenchmarkEventToUpdate(b *testing.B) {
	const n = 10000
	host := adaptertest.AllCapable(fakeHost(b, "flood:"+strconv.Itoa(n)+":50"))
	servicetest.BenchEventToUpdate(b, host, n, func(e core.Entry) (int64, bool) {
		if e.Kind != core.KindAssistantMessage {
			return 0, false
		}
		i := strings.LastIndexByte(e.NativeID, '-')
		sent, err := strconv.ParseInt(e.NativeID[i+1:], 10, 64)
		return sent, err == nil
	})
}
