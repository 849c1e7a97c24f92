// Package zstd decodes Zstandard frames (RFC 8878): what DeepSeek Harness
// writes to its session logs. It is a decoder only, with no dictionaries,
// written for Bridge so that the binary does not link a compression library
// whose package initialisation (tables built before main) every start of
// Bridge would pay for; this package builds nothing until it decodes.
//
// Decode takes whole frames in memory, as the session log reader already
// splits its file into frames.
package zstd

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Errors: ErrCorrupt wraps every failure caused by the input.
var (
	// ErrCorrupt: the input is not a valid Zstandard frame.
	ErrCorrupt = errors.New("zstd: corrupt input")
	// ErrTooLarge: the content would exceed the caller's limit.
	ErrTooLarge = errors.New("zstd: decoded content exceeds the limit")
	// ErrDictionary: the frame needs a dictionary, which is not supported.
	ErrDictionary = errors.New("zstd: frames that need a dictionary are not supported")
)

const (
	frameMagic     = 0xFD2FB528
	skippableMagic = 0x184D2A50 // low 4 bits vary
	maxBlockSize   = 128 << 10
	maxPrealloc    = 8 << 20
)

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// Decode decodes every frame in src (skippable frames are skipped) and
// appends their content to dst. It fails with ErrTooLarge before the
// appended content grows past maxSize bytes, and with an error wrapping
// ErrCorrupt when src is not made of whole, valid frames.
func Decode(dst, src []byte, maxSize int64) ([]byte, error) {
	var d decoder
	start := len(dst)
	for len(src) > 0 {
		if len(src) < 4 {
			return dst, corrupt("%d bytes left, too few for a frame", len(src))
		}
		magic := binary.LittleEndian.Uint32(src)
		if magic&^0xF == skippableMagic {
			if len(src) < 8 {
				return dst, corrupt("skippable frame header cut short")
			}
			n := uint64(binary.LittleEndian.Uint32(src[4:]))
			if n > uint64(len(src)-8) {
				return dst, corrupt("skippable frame of %d bytes cut short", n)
			}
			src = src[8+n:]
			continue
		}
		if magic != frameMagic {
			return dst, corrupt("no frame magic (found %#08x)", magic)
		}
		var err error
		dst, src, err = d.frame(dst, src[4:], maxSize-int64(len(dst)-start))
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// decoder holds what one frame's blocks share: the repeat offsets, the
// last tables, and buffers reused from block to block.
type decoder struct {
	reps     [3]int
	huff     huffTable
	haveHuff bool
	ll, of   fseTable
	ml       fseTable
	literals []byte
	scratch  fseScratch
}

// frameHeader is what a frame header says about the frame.
type frameHeader struct {
	window   uint64 // the window size (the content size for a single segment)
	fcs      uint64 // the content size, when haveFCS
	haveFCS  bool
	checksum bool // a content checksum follows the last block
}

// readFrameHeader reads a frame header (after the magic) and returns the
// rest of the frame.
func readFrameHeader(src []byte) (frameHeader, []byte, error) {
	var h frameHeader
	if len(src) < 1 {
		return h, nil, corrupt("frame header cut short")
	}
	desc := src[0]
	src = src[1:]
	fcsFlag := desc >> 6
	single := desc&0x20 != 0
	if desc&0x08 != 0 {
		return h, nil, corrupt("reserved bit set in the frame header")
	}
	h.checksum = desc&0x04 != 0
	dictSize := [4]int{0, 1, 2, 4}[desc&3]
	fcsSize := [4]int{0, 2, 4, 8}[fcsFlag]
	if fcsFlag == 0 && single {
		fcsSize = 1
	}
	need := dictSize + fcsSize
	if !single {
		need++
	}
	if len(src) < need {
		return h, nil, corrupt("frame header cut short")
	}
	if !single {
		wd := src[0]
		src = src[1:]
		exp := uint(wd >> 3)
		base := uint64(1) << (10 + exp)
		h.window = base + base/8*uint64(wd&7)
	}
	var dict uint64
	for i := range dictSize {
		dict |= uint64(src[i]) << (8 * i)
	}
	src = src[dictSize:]
	if dict != 0 {
		return h, nil, ErrDictionary
	}
	h.haveFCS = fcsSize > 0
	for i := range fcsSize {
		h.fcs |= uint64(src[i]) << (8 * i)
	}
	if fcsSize == 2 {
		h.fcs += 256
	}
	src = src[fcsSize:]
	if single {
		h.window = h.fcs
	}
	return h, src, nil
}

// frame decodes one frame (after its magic) onto dst.
func (d *decoder) frame(dst, src []byte, limit int64) ([]byte, []byte, error) {
	h, src, err := readFrameHeader(src)
	if err != nil {
		return dst, nil, err
	}
	if h.haveFCS && h.fcs > uint64(limit) {
		return dst, nil, ErrTooLarge
	}
	start := len(dst)
	if h.haveFCS && h.fcs > 0 {
		// Room for the declared content, up to a bound: a few corrupt
		// bytes can declare a gigabyte, which must not be allocated
		// before any of it is decoded.
		dst = grow(dst, int(min(h.fcs, maxPrealloc)))
	}
	d.reps = [3]int{1, 4, 8}
	d.haveHuff = false
	d.ll.ok, d.of.ok, d.ml.ok = false, false, false
	dst, src, err = d.blocks(dst, src, start, limit, min(h.window, maxBlockSize))
	if err != nil {
		return dst, nil, err
	}
	if h.haveFCS && uint64(len(dst)-start) != h.fcs {
		return dst, nil, corrupt("frame declares %d bytes of content and holds %d", h.fcs, len(dst)-start)
	}
	if h.checksum {
		if len(src) < 4 {
			return dst, nil, corrupt("content checksum cut short")
		}
		if want, got := binary.LittleEndian.Uint32(src), uint32(xxhash64(dst[start:])); want != got {
			return dst, nil, corrupt("content checksum %#08x, the content hashes to %#08x", want, got)
		}
		src = src[4:]
	}
	return dst, src, nil
}

// blocks decodes a frame's blocks onto dst, up to and including the last
// one, and returns the rest of the frame. The frame's content starts at
// dst[start]; no block may be larger than blockMax.
func (d *decoder) blocks(dst, src []byte, start int, limit int64, blockMax uint64) ([]byte, []byte, error) {
	for {
		if len(src) < 3 {
			return dst, nil, corrupt("block header cut short")
		}
		h := uint32(src[0]) | uint32(src[1])<<8 | uint32(src[2])<<16
		src = src[3:]
		last := h&1 != 0
		size := int(h >> 3)
		typ := (h >> 1) & 3
		switch {
		case typ == 3:
			return dst, nil, corrupt("reserved block type")
		case typ == 0 && len(src) < size:
			return dst, nil, corrupt("raw block of %d bytes cut short", size)
		case typ == 1 && len(src) < 1:
			return dst, nil, corrupt("RLE block cut short")
		case typ == 2 && len(src) < size:
			return dst, nil, corrupt("compressed block of %d bytes cut short", size)
		case uint64(size) > blockMax:
			return dst, nil, corrupt("block of %d bytes over the maximum %d", size, blockMax)
		}
		switch typ {
		case 0: // raw
			if int64(len(dst)-start+size) > limit {
				return dst, nil, ErrTooLarge
			}
			dst = append(dst, src[:size]...)
			src = src[size:]
		case 1: // RLE
			if int64(len(dst)-start+size) > limit {
				return dst, nil, ErrTooLarge
			}
			b := src[0]
			src = src[1:]
			for range size {
				dst = append(dst, b)
			}
		case 2: // compressed
			var err error
			dst, err = d.block(dst, src[:size], start, limit, int(blockMax))
			if err != nil {
				return dst, nil, err
			}
			src = src[size:]
		}
		if last {
			return dst, src, nil
		}
	}
}

// grow makes room for n more bytes in b.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	out := make([]byte, len(b), len(b)+n)
	copy(out, b)
	return out
}

// block decodes one compressed block onto dst; the frame's content starts
// at dst[start].
func (d *decoder) block(dst, src []byte, start int, limit int64, blockMax int) ([]byte, error) {
	n, err := d.readLiterals(src, blockMax)
	if err != nil {
		return dst, err
	}
	src = src[n:]
	return d.sequences(dst, src, start, limit, blockMax)
}

// readLiterals decodes a block's literals section into d.literals and
// returns its size in src.
func (d *decoder) readLiterals(src []byte, blockMax int) (int, error) {
	if len(src) < 1 {
		return 0, corrupt("literals section cut short")
	}
	if src[0]&3 < 2 {
		return d.plainLiterals(src, blockMax)
	}
	return d.huffLiterals(src, blockMax)
}

// plainLiterals reads a raw or RLE literals section.
func (d *decoder) plainLiterals(src []byte, blockMax int) (int, error) {
	var regen, hdr int
	switch (src[0] >> 2) & 3 {
	case 0, 2:
		regen, hdr = int(src[0]>>3), 1
	case 1:
		if len(src) < 2 {
			return 0, corrupt("literals header cut short")
		}
		regen, hdr = int(src[0]>>4)|int(src[1])<<4, 2
	case 3:
		if len(src) < 3 {
			return 0, corrupt("literals header cut short")
		}
		regen, hdr = int(src[0]>>4)|int(src[1])<<4|int(src[2])<<12, 3
	}
	if regen > blockMax {
		return 0, corrupt("%d literals in a block of at most %d bytes", regen, blockMax)
	}
	if src[0]&3 == 0 {
		if len(src) < hdr+regen {
			return 0, corrupt("raw literals cut short")
		}
		d.literals = append(d.literals[:0], src[hdr:hdr+regen]...)
		return hdr + regen, nil
	}
	if len(src) < hdr+1 {
		return 0, corrupt("RLE literals cut short")
	}
	d.literals = d.literals[:0]
	for range regen {
		d.literals = append(d.literals, src[hdr])
	}
	return hdr + 1, nil
}

// huffLiterals reads a Huffman-coded literals section (with its own table,
// or the previous block's).
func (d *decoder) huffLiterals(src []byte, blockMax int) (int, error) {
	var regen, csize, hdr int
	streams := 4
	switch sizeFormat := (src[0] >> 2) & 3; sizeFormat {
	case 0, 1:
		if len(src) < 3 {
			return 0, corrupt("literals header cut short")
		}
		if sizeFormat == 0 {
			streams = 1
		}
		v := int(src[0]>>4) | int(src[1])<<4 | int(src[2])<<12
		regen, csize, hdr = v&0x3FF, v>>10, 3
	case 2:
		if len(src) < 4 {
			return 0, corrupt("literals header cut short")
		}
		v := int(src[0]>>4) | int(src[1])<<4 | int(src[2])<<12 | int(src[3])<<20
		regen, csize, hdr = v&0x3FFF, v>>14, 4
	case 3:
		if len(src) < 5 {
			return 0, corrupt("literals header cut short")
		}
		v := int(src[0]>>4) | int(src[1])<<4 | int(src[2])<<12 | int(src[3])<<20 | int(src[4])<<28
		regen, csize, hdr = v&0x3FFFF, v>>18, 5
	}
	if regen > blockMax {
		return 0, corrupt("%d literals in a block of at most %d bytes", regen, blockMax)
	}
	if len(src) < hdr+csize {
		return 0, corrupt("compressed literals cut short")
	}
	data := src[hdr : hdr+csize]
	if src[0]&3 == 2 {
		n, err := d.huff.read(data, &d.scratch)
		if err != nil {
			return 0, err
		}
		d.haveHuff = true
		data = data[n:]
	} else if !d.haveHuff {
		return 0, corrupt("literals reuse a Huffman table that no earlier block defined")
	}
	if cap(d.literals) < regen {
		d.literals = make([]byte, regen)
	}
	d.literals = d.literals[:regen]
	if streams == 1 {
		if err := d.huff.decode(d.literals, data); err != nil {
			return 0, err
		}
		return hdr + csize, nil
	}
	if err := d.fourStreams(data, regen); err != nil {
		return 0, err
	}
	return hdr + csize, nil
}

// fourStreams decodes regen literals coded as four Huffman streams (a jump
// table of three sizes, then the streams) into d.literals.
func (d *decoder) fourStreams(data []byte, regen int) error {
	if len(data) < 6 {
		return corrupt("literals jump table cut short")
	}
	s1 := int(binary.LittleEndian.Uint16(data))
	s2 := int(binary.LittleEndian.Uint16(data[2:]))
	s3 := int(binary.LittleEndian.Uint16(data[4:]))
	data = data[6:]
	if s1+s2+s3 > len(data) {
		return corrupt("literals streams larger than their section")
	}
	per := (regen + 3) / 4
	if 3*per > regen {
		return corrupt("%d literals cannot fill four streams", regen)
	}
	out := d.literals
	for i, sz := range []int{s1, s2, s3, len(data) - s1 - s2 - s3} {
		o := out[i*per : min((i+1)*per, regen)]
		if i == 3 {
			o = out[3*per:]
		}
		if err := d.huff.decode(o, data[:sz]); err != nil {
			return err
		}
		data = data[sz:]
	}
	return nil
}
