package zstd

import "math/bits"

// fseEntry is one state of an FSE decoding table.
type fseEntry struct {
	symbol uint8
	nbBits uint8
	base   uint16 // next state = base + the next nbBits bits
}

// fseTable is a decoding table of 1<<log states.
type fseTable struct {
	states []fseEntry
	log    uint
	ok     bool // defined (for the Repeat mode)
}

// fseScratch is reused while building tables.
type fseScratch struct {
	norm [256]int16
	next [256]uint16
}

// readNorm reads an FSE table description (the normalised counts of
// symbols 0..maxSymbol) from src into s.norm. It returns the accuracy log,
// the number of symbols and the description's size in bytes.
func readNorm(src []byte, maxSymbol int, maxLog uint, s *fseScratch) (log uint, nsym int, size int, err error) {
	r := fwdReader{src: src}
	log = uint(r.read(4)) + 5
	if log > maxLog {
		return 0, 0, 0, corrupt("FSE accuracy log %d over the maximum %d", log, maxLog)
	}
	remaining := int32(1)<<log + 1
	threshold := int32(1) << log
	nbBits := log + 1
	sym := 0
	prev0 := false
	for remaining > 1 && sym <= maxSymbol {
		if prev0 {
			n0 := sym
			for {
				v := int(r.read(2))
				n0 += v
				if v != 3 {
					break
				}
				if n0 > maxSymbol+1 {
					break
				}
			}
			if n0 > maxSymbol {
				return 0, 0, 0, corrupt("FSE description runs past symbol %d", maxSymbol)
			}
			for ; sym < n0; sym++ {
				s.norm[sym] = 0
			}
		}
		max := 2*threshold - 1 - remaining
		var count int32
		if v := int32(r.peek(nbBits - 1)); v < max {
			count = v
			r.pos += nbBits - 1
		} else {
			count = int32(r.peek(nbBits)) & (2*threshold - 1)
			if count >= threshold {
				count -= max
			}
			r.pos += nbBits
		}
		count--
		if count < 0 {
			remaining += count
		} else {
			remaining -= count
		}
		s.norm[sym] = int16(count)
		sym++
		prev0 = count == 0
		for remaining < threshold && threshold > 1 {
			nbBits--
			threshold >>= 1
		}
	}
	if remaining != 1 {
		return 0, 0, 0, corrupt("FSE description does not add up")
	}
	size = int(r.pos+7) / 8
	if size > len(src) {
		return 0, 0, 0, corrupt("FSE description cut short")
	}
	return log, sym, size, nil
}

// build makes the decoding table of the normalised counts s.norm[:nsym].
func (t *fseTable) build(s *fseScratch, nsym int, log uint) error {
	size := 1 << log
	if cap(t.states) < size {
		t.states = make([]fseEntry, size, max(size, 512))
	}
	t.states = t.states[:size]
	t.log = log
	high := size - 1
	for i := range nsym {
		if s.norm[i] == -1 {
			t.states[high].symbol = uint8(i)
			high--
			s.next[i] = 1
		} else {
			s.next[i] = uint16(s.norm[i])
		}
	}
	mask := size - 1
	step := size>>1 + size>>3 + 3
	pos := 0
	for i := range nsym {
		for range int(max(s.norm[i], 0)) {
			t.states[pos].symbol = uint8(i)
			pos = (pos + step) & mask
			for pos > high {
				pos = (pos + step) & mask
			}
		}
	}
	if pos != 0 {
		return corrupt("FSE table does not fill its states")
	}
	for u := range size {
		sym := t.states[u].symbol
		next := s.next[sym]
		s.next[sym]++
		if next == 0 {
			return corrupt("FSE table with an empty symbol")
		}
		nb := log - uint(bits.Len16(next)-1)
		t.states[u].nbBits = uint8(nb)
		t.states[u].base = uint16(int(next)<<nb - size)
	}
	t.ok = true
	return nil
}

// rle makes a table whose only state decodes sym.
func (t *fseTable) rle(sym uint8) {
	if cap(t.states) < 1 {
		t.states = make([]fseEntry, 1, 512)
	}
	t.states = t.states[:1]
	t.states[0] = fseEntry{symbol: sym}
	t.log = 0
	t.ok = true
}

// predefined builds a table from a predefined distribution.
func (t *fseTable) predefined(norm []int16, log uint, s *fseScratch) {
	copy(s.norm[:], norm)
	if err := t.build(s, len(norm), log); err != nil {
		panic("zstd: predefined distribution: " + err.Error()) // a bug in this file
	}
}

// huffTable decodes Huffman-coded literals: 1<<maxBits entries, each the
// symbol of the code prefixing its index and the code's length.
type huffTable struct {
	entries []huffEntry
	maxBits uint
	weights [256]uint8
	fse     fseTable
}

type huffEntry struct {
	symbol uint8
	nbBits uint8
}

const maxHuffBits = 11

// read reads a Huffman tree description and builds the table; it returns
// the description's size.
func (h *huffTable) read(src []byte, s *fseScratch) (int, error) {
	if len(src) < 1 {
		return 0, corrupt("Huffman tree description cut short")
	}
	hb := int(src[0])
	var n, size int
	if hb >= 128 {
		n = hb - 127
		size = 1 + (n+1)/2
		if len(src) < size {
			return 0, corrupt("Huffman weights cut short")
		}
		for i := range n {
			b := src[1+i/2]
			if i%2 == 0 {
				h.weights[i] = b >> 4
			} else {
				h.weights[i] = b & 15
			}
		}
	} else {
		size = 1 + hb
		if len(src) < size {
			return 0, corrupt("Huffman weights cut short")
		}
		var err error
		if n, err = h.fseWeights(src[1:size], s); err != nil {
			return 0, err
		}
	}
	if n > 255 {
		return 0, corrupt("%d Huffman weights", n)
	}
	// The last symbol's weight is what brings the total to a power of 2.
	var total uint32
	for _, w := range h.weights[:n] {
		if w > maxHuffBits {
			return 0, corrupt("Huffman weight %d", w)
		}
		if w > 0 {
			total += 1 << (w - 1)
		}
	}
	if total == 0 {
		return 0, corrupt("Huffman weights all zero")
	}
	maxBits := uint(bits.Len32(total))
	if maxBits > maxHuffBits {
		return 0, corrupt("Huffman codes longer than %d bits", maxHuffBits)
	}
	rest := uint32(1)<<maxBits - total
	if rest&(rest-1) != 0 {
		return 0, corrupt("Huffman weights do not complete a tree")
	}
	h.weights[n] = uint8(bits.Len32(rest))
	n++
	h.maxBits = maxBits
	tsize := 1 << maxBits
	if cap(h.entries) < tsize {
		h.entries = make([]huffEntry, tsize, 1<<maxHuffBits)
	}
	h.entries = h.entries[:tsize]
	pos := 0
	for w := uint8(1); w <= uint8(maxBits); w++ {
		span := 1 << (w - 1)
		e := huffEntry{nbBits: uint8(maxBits + 1 - uint(w))}
		for sym := range n {
			if h.weights[sym] != w {
				continue
			}
			e.symbol = uint8(sym)
			if pos+span > tsize {
				return 0, corrupt("Huffman weights overfill the table")
			}
			for i := range span {
				h.entries[pos+i] = e
			}
			pos += span
		}
	}
	if pos != tsize {
		return 0, corrupt("Huffman weights underfill the table")
	}
	return size, nil
}

// fseWeights decodes FSE-compressed Huffman weights into h.weights and
// returns how many there are.
func (h *huffTable) fseWeights(src []byte, s *fseScratch) (int, error) {
	log, nsym, size, err := readNorm(src, 255, 6, s)
	if err != nil {
		return 0, err
	}
	if err := h.fse.build(s, nsym, log); err != nil {
		return 0, err
	}
	var r backReader
	if err := r.init(src[size:]); err != nil {
		return 0, err
	}
	t := h.fse.states
	s1 := uint(r.read(log))
	s2 := uint(r.read(log))
	n := 0
	for {
		if n > 253 {
			return 0, corrupt("too many Huffman weights")
		}
		e := t[s1]
		h.weights[n] = e.symbol
		n++
		s1 = uint(e.base) + uint(r.read(uint(e.nbBits)))
		if r.over > 0 {
			h.weights[n] = t[s2].symbol
			n++
			break
		}
		e = t[s2]
		h.weights[n] = e.symbol
		n++
		s2 = uint(e.base) + uint(r.read(uint(e.nbBits)))
		if r.over > 0 {
			h.weights[n] = t[s1].symbol
			n++
			break
		}
		if int(s1) >= len(t) || int(s2) >= len(t) {
			return 0, corrupt("FSE state out of its table")
		}
	}
	return n, nil
}

// decode fills out with symbols from one Huffman-coded stream, which must
// be used up exactly.
func (h *huffTable) decode(out []byte, src []byte) error {
	var r backReader
	if err := r.init(src); err != nil {
		return err
	}
	mb := h.maxBits
	t := h.entries
	for i := range out {
		if r.n < mb {
			r.fill()
		}
		e := t[r.peek(mb)]
		out[i] = e.symbol
		r.skip(uint(e.nbBits))
	}
	if !r.finished() {
		return corrupt("Huffman stream not used up exactly")
	}
	return nil
}
