package claudecode

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/servicetest"
)

// BenchmarkEventToUpdate measures the whole path Bridge adds per Claude
// Code event: a stream-json line written by the fake `claude` -> parsed by
// the adapter -> appended to the SQLite record -> session/update handed to
// the client. 10,000 lines per turn, paced 100 µs apart; each line's text
// is the time it was written.
func BenchmarkEventToUpdate(b *testing.B) {
	const perTurn = 10000
	cfg := fakeCommand(b, "bench", "CLAUDECODE_FAKE_N="+strconv.Itoa(perTurn), "CLAUDECODE_FAKE_PACE_US=100")
	servicetest.BenchEventToUpdate(b, New(cfg), perTurn, func(e core.Entry) (int64, bool) {
		if e.Kind != core.KindAssistantMessage {
			return 0, false
		}
		var p struct {
			Text string `json:"text"`
		}
		json.Unmarshal(e.Payload, &p)
		sent, err := strconv.ParseInt(p.Text, 10, 64)
		return sent, err == nil
	})
}
