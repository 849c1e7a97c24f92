package core

import (
	"crypto/rand"
	"encoding/binary"
	"io"
	"math/bits"
	"sync"
	"time"
)

// IDs makes the record's identifiers: a kind prefix ("s_" session, "e_"
// entry, "p_" preview) and a ULID (48 bits of Unix milliseconds, 80 random
// bits, 26 characters of Crockford base 32), so that ids sort by creation
// time. Within one generator, ids made in the same millisecond still
// increase: the random part of the last id grows by a random step of 1 to
// 2^32 (monotonic entropy). It is safe for concurrent use. It is the only id
// generator: the service and the store take one (Options.IDs), and NewID
// uses the default one.
type IDs struct {
	mu      sync.Mutex
	clock   Clock
	entropy io.Reader
	ms      uint64 // time of the last id
	hi      uint16 // random part of the last id: hi<<64 | lo
	lo      uint64
	started bool
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
	return &IDs{clock: clock, entropy: entropy}
}

// New returns prefix followed by a new ULID.
func (g *IDs) New(prefix string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.clock()
	ms := uint64(t.Unix())*1000 + uint64(t.Nanosecond()/int(time.Millisecond))
	if !g.started || ms != g.ms || !g.step() {
		// A new millisecond, or the random part would overflow within
		// this one (after about 2^48 ids): a fresh random part.
		g.fresh()
	}
	g.ms, g.started = ms, true
	var id [16]byte
	binary.BigEndian.PutUint16(id[0:], uint16(ms>>32))
	binary.BigEndian.PutUint32(id[2:], uint32(ms))
	binary.BigEndian.PutUint16(id[6:], g.hi)
	binary.BigEndian.PutUint64(id[8:], g.lo)
	return prefix + encodeULID(id)
}

// step adds a random step of 1 to 2^32 to the random part; false when it
// would overflow its 80 bits.
func (g *IDs) step() bool {
	var b [4]byte
	g.read(b[:])
	lo, carry := bits.Add64(g.lo, uint64(binary.BigEndian.Uint32(b[:]))+1, 0)
	if carry == 1 && g.hi == 0xFFFF {
		return false
	}
	g.lo, g.hi = lo, g.hi+uint16(carry)
	return true
}

// fresh draws a new random part.
func (g *IDs) fresh() {
	var b [10]byte
	g.read(b[:])
	g.hi, g.lo = binary.BigEndian.Uint16(b[:]), binary.BigEndian.Uint64(b[2:])
}

// read fills b from the entropy source, or from crypto/rand when that
// source fails.
func (g *IDs) read(b []byte) {
	if _, err := io.ReadFull(g.entropy, b); err != nil {
		rand.Read(b)
	}
}

// crockford is Crockford's base 32 alphabet, the one ULIDs use.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// encodeULID writes the 128 bits of id as 26 base-32 digits, most
// significant first (the first digit holds the top 3 bits).
func encodeULID(id [16]byte) string {
	hi, lo := binary.BigEndian.Uint64(id[:8]), binary.BigEndian.Uint64(id[8:])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// DefaultIDs is the generator NewID uses.
var DefaultIDs = NewIDs(nil, nil)

// NewID returns a new identifier from DefaultIDs.
func NewID(prefix string) string { return DefaultIDs.New(prefix) }
