package storage

import (
	"crypto/rand"
	"time"
)

// crockford is Crockford's base32 alphabet: sortable, no I, L, O or U.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// newID returns prefix followed by 26 characters: 10 encoding the time in
// milliseconds (so ids sort by creation time) and 16 encoding 80 random bits.
func newID(prefix string, now time.Time) string {
	var out [32]byte
	buf := append(out[:0], prefix...)
	var ts [10]byte
	ms := uint64(now.UnixMilli())
	for i := len(ts) - 1; i >= 0; i-- {
		ts[i] = crockford[ms&31]
		ms >>= 5
	}
	buf = append(buf, ts[:]...)
	var r [10]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never returns an error
	var acc uint64
	bits := 0
	for _, x := range r {
		acc = acc<<8 | uint64(x)
		bits += 8
		for bits >= 5 {
			bits -= 5
			buf = append(buf, crockford[(acc>>uint(bits))&31])
		}
	}
	return string(buf)
}
