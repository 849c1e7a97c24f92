package zstd

import "math/bits"

// backReader reads a Zstandard backward bit stream: the stream is read
// from its last byte to its first, most significant bit first, starting
// below the highest set bit of the last byte (the end marker). Bits read
// past the start of the stream are zeros and are counted in over.
type backReader struct {
	src  []byte
	off  int    // src[:off] is not loaded yet
	c    uint64 // the low n bits are the next bits, the most significant first
	n    uint
	over uint // bits read past the start of the stream
}

func (r *backReader) init(src []byte) error {
	if len(src) == 0 {
		return corrupt("empty bit stream")
	}
	last := src[len(src)-1]
	if last == 0 {
		return corrupt("bit stream without an end marker")
	}
	hb := uint(bits.Len8(last)) - 1
	*r = backReader{src: src, off: len(src) - 1, c: uint64(last) & (1<<hb - 1), n: hb}
	r.fill()
	return nil
}

// fill loads bytes until at least 56 bits are ready or the stream's start
// is reached.
func (r *backReader) fill() {
	for r.n <= 56 && r.off > 0 {
		r.off--
		r.c = r.c<<8 | uint64(r.src[r.off])
		r.n += 8
	}
}

// peek returns the next k bits (k ≤ 56, after fill) without reading them.
func (r *backReader) peek(k uint) uint64 {
	if k == 0 {
		return 0
	}
	if r.n >= k {
		return (r.c >> (r.n - k)) & (1<<k - 1)
	}
	return (r.c << (k - r.n)) & (1<<k - 1)
}

// skip reads k bits that peek returned.
func (r *backReader) skip(k uint) {
	if r.n >= k {
		r.n -= k
		return
	}
	r.over += k - r.n
	r.n = 0
}

// read returns the next k bits (k ≤ 56).
func (r *backReader) read(k uint) uint64 {
	if r.n < k {
		r.fill()
	}
	v := r.peek(k)
	r.skip(k)
	return v
}

// finished reports whether exactly every bit was read.
func (r *backReader) finished() bool { return r.off == 0 && r.n == 0 && r.over == 0 }

// fwdReader reads bits least significant first from the start of a byte
// slice (FSE table descriptions); bits past the end are zeros.
type fwdReader struct {
	src []byte
	pos uint // in bits
}

func (r *fwdReader) read(k uint) uint32 {
	var v uint32
	for i := uint(0); i < k; i++ {
		p := r.pos + i
		if b := p / 8; int(b) < len(r.src) {
			v |= uint32(r.src[b]>>(p%8)&1) << i
		}
	}
	r.pos += k
	return v
}

// peek returns the next k bits without reading them.
func (r *fwdReader) peek(k uint) uint32 {
	pos := r.pos
	v := r.read(k)
	r.pos = pos
	return v
}

// xxhash64 is XXH64 with seed 0 (the frame content checksum).
func xxhash64(b []byte) uint64 {
	const (
		p1 uint64 = 11400714785074694791
		p2 uint64 = 14029467366897019727
		p3 uint64 = 1609587929392839161
		p4 uint64 = 9650029242287828579
		p5 uint64 = 2870177450012600261
	)
	round := func(acc, in uint64) uint64 {
		acc += in * p2
		acc = bits.RotateLeft64(acc, 31)
		return acc * p1
	}
	merge := func(acc, v uint64) uint64 {
		acc ^= round(0, v)
		return acc*p1 + p4
	}
	le64 := func(b []byte) uint64 {
		return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
	}
	n := uint64(len(b))
	var h uint64
	if len(b) >= 32 {
		prime1, prime2 := p1, p2 // variables: their sum wraps
		v1, v2, v3, v4 := prime1+prime2, prime2, uint64(0), -prime1
		for len(b) >= 32 {
			v1 = round(v1, le64(b))
			v2 = round(v2, le64(b[8:]))
			v3 = round(v3, le64(b[16:]))
			v4 = round(v4, le64(b[24:]))
			b = b[32:]
		}
		h = bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) + bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
		h = merge(h, v1)
		h = merge(h, v2)
		h = merge(h, v3)
		h = merge(h, v4)
	} else {
		h = p5
	}
	h += n
	for ; len(b) >= 8; b = b[8:] {
		h ^= round(0, le64(b))
		h = bits.RotateLeft64(h, 27)*p1 + p4
	}
	if len(b) >= 4 {
		h ^= uint64(uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24) * p1
		h = bits.RotateLeft64(h, 23)*p2 + p3
		b = b[4:]
	}
	for _, c := range b {
		h ^= uint64(c) * p5
		h = bits.RotateLeft64(h, 11) * p1
	}
	h ^= h >> 33
	h *= p2
	h ^= h >> 29
	h *= p3
	h ^= h >> 32
	return h
}
