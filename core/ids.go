package core

import (
	"crypto/rand"
	"io"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// IDs makes the record's identifiers: a kind prefix ("s_" session, "e_"
// entry, "p_" preview) and a ULID, so that ids sort by creation time.
// Within one generator, ids made in the same millisecond still increase
// (monotonic entropy). It is safe for concurrent use. It is the only id
// generator: the service and the store take one (Options.IDs), and NewID
// uses the default one.
type IDs struct {
	mu      sync.Mutex
	clock   Clock
	entropy *ulid.MonotonicEntropy
}

// NewIDs returns a generator reading time from clock and randomness from
// entropy; nil means time.Now and crypto/rand.
func NewIDs(clock Clock, entropy io.Reader) *IDs {
	if clock == nil {
		clock = time.Now
	}
	if entropy == nil {
		entropy = rand.Reader
	}
	return &IDs{clock: clock, entropy: ulid.Monotonic(entropy, 0)}
}

// New returns prefix followed by a new ULID.
func (g *IDs) New(prefix string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	id, err := ulid.New(ulid.Timestamp(g.clock()), g.entropy)
	if err != nil {
		// The monotonic entropy overflowed within one millisecond (2^80
		// ids) or the reader failed: start a fresh random sequence.
		id = ulid.Make()
	}
	return prefix + id.String()
}

// DefaultIDs is the generator NewID uses.
var DefaultIDs = NewIDs(nil, nil)

// NewID returns a new identifier from DefaultIDs.
func NewID(prefix string) string { return DefaultIDs.New(prefix) }
