package zstd

// Baselines and extra bits of the literal length and match length codes
// (RFC 8878, 3.1.1.3.2.1.1).
var (
	llBase = [36]uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
		16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048, 4096,
		8192, 16384, 32768, 65536}
	llBits = [36]uint8{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12,
		13, 14, 15, 16}
	mlBase = [53]uint32{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
		19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34,
		35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027, 2051,
		4099, 8195, 16387, 32771, 65539}
	mlBits = [53]uint8{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11,
		12, 13, 14, 15, 16}
)

// The predefined distributions (RFC 8878, 3.1.1.3.2.2).
var (
	llDefault = []int16{4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1,
		2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1,
		-1, -1, -1, -1}
	mlDefault = []int16{1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
		1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1,
		-1, -1, -1, -1, -1}
	ofDefault = []int16{1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
		1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1}
)

// sequenceTable reads one symbol type's compression mode into t.
func (d *decoder) sequenceTable(t *fseTable, mode byte, src []byte, maxSymbol int, maxLog uint, def []int16, defLog uint) (int, error) {
	switch mode {
	case 0:
		t.predefined(def, defLog, &d.scratch)
		return 0, nil
	case 1:
		if len(src) < 1 {
			return 0, corrupt("RLE sequence table cut short")
		}
		if int(src[0]) > maxSymbol {
			return 0, corrupt("RLE sequence symbol %d over %d", src[0], maxSymbol)
		}
		t.rle(src[0])
		return 1, nil
	case 2:
		log, nsym, size, err := readNorm(src, maxSymbol, maxLog, &d.scratch)
		if err != nil {
			return 0, err
		}
		if err := t.build(&d.scratch, nsym, log); err != nil {
			return 0, err
		}
		return size, nil
	default:
		if !t.ok {
			return 0, corrupt("sequences repeat a table that no earlier block defined")
		}
		return 0, nil
	}
}

// sequences decodes a block's sequences section and executes it onto dst,
// with the literals in d.literals.
func (d *decoder) sequences(dst, src []byte, start int, limit int64, blockMax int) ([]byte, error) {
	nseq, src, err := sequenceCount(src)
	if err != nil {
		return dst, err
	}
	lits := d.literals
	if nseq == 0 {
		if len(src) != 0 {
			return dst, corrupt("%d bytes after an empty sequences section", len(src))
		}
		if int64(len(dst)-start+len(lits)) > limit {
			return dst, ErrTooLarge
		}
		return append(dst, lits...), nil
	}
	if src, err = d.sequenceTables(src); err != nil {
		return dst, err
	}
	return d.execute(dst, lits, src, nseq, start, limit, blockMax)
}

// sequenceCount reads the number of sequences from the section's header
// and returns the rest of the section.
func sequenceCount(src []byte) (int, []byte, error) {
	if len(src) < 1 {
		return 0, nil, corrupt("sequences section cut short")
	}
	nseq := int(src[0])
	switch {
	case nseq < 128:
		return nseq, src[1:], nil
	case nseq < 255:
		if len(src) < 2 {
			return 0, nil, corrupt("sequences header cut short")
		}
		return (nseq-128)<<8 | int(src[1]), src[2:], nil
	default:
		if len(src) < 3 {
			return 0, nil, corrupt("sequences header cut short")
		}
		return int(src[1]) | int(src[2])<<8 + 0x7F00, src[3:], nil
	}
}

// sequenceTables reads the compression modes and the literal length,
// offset and match length tables, and returns the rest of the section (the
// sequences' bit stream).
func (d *decoder) sequenceTables(src []byte) ([]byte, error) {
	if len(src) < 1 {
		return nil, corrupt("sequences header cut short")
	}
	modes := src[0]
	src = src[1:]
	if modes&3 != 0 {
		return nil, corrupt("reserved bits set in the sequence modes")
	}
	for _, tt := range []struct {
		t      *fseTable
		mode   byte
		maxSym int
		maxLog uint
		def    []int16
		defLog uint
	}{
		{&d.ll, modes >> 6, 35, 9, llDefault, 6},
		{&d.of, (modes >> 4) & 3, 31, 8, ofDefault, 5},
		{&d.ml, (modes >> 2) & 3, 52, 9, mlDefault, 6},
	} {
		n, err := d.sequenceTable(tt.t, tt.mode, src, tt.maxSym, tt.maxLog, tt.def, tt.defLog)
		if err != nil {
			return nil, err
		}
		src = src[n:]
	}
	return src, nil
}

// execute decodes nseq sequences from their bit stream src and executes
// them onto dst: each copies its literals from lits, then its match from
// what dst already holds of the frame (which starts at dst[start]). The
// literals left after the last sequence end the block.
func (d *decoder) execute(dst, lits, src []byte, nseq, start int, limit int64, blockMax int) ([]byte, error) {
	var r backReader
	if err := r.init(src); err != nil {
		return dst, err
	}
	ll, of, ml := d.ll.states, d.of.states, d.ml.states
	sll := uint(r.read(d.ll.log))
	sof := uint(r.read(d.of.log))
	sml := uint(r.read(d.ml.log))
	blockStart := len(dst)
	for i := range nseq {
		le, oe, me := ll[sll], of[sof], ml[sml]
		if le.symbol > 35 || me.symbol > 52 || oe.symbol > 31 {
			return dst, corrupt("sequence code out of range")
		}
		r.fill()
		ofv := int(1)<<oe.symbol + int(r.read(uint(oe.symbol)))
		r.fill()
		mlen := int(mlBase[me.symbol]) + int(r.read(uint(mlBits[me.symbol])))
		llen := int(llBase[le.symbol]) + int(r.read(uint(llBits[le.symbol])))
		if i < nseq-1 {
			r.fill()
			sll = uint(le.base) + uint(r.read(uint(le.nbBits)))
			sml = uint(me.base) + uint(r.read(uint(me.nbBits)))
			sof = uint(oe.base) + uint(r.read(uint(oe.nbBits)))
		}
		var off int
		if ofv > 3 {
			off = ofv - 3
			d.reps = [3]int{off, d.reps[0], d.reps[1]}
		} else {
			idx := ofv - 1
			if llen == 0 {
				idx++
			}
			switch idx {
			case 0:
				off = d.reps[0]
			case 1:
				off = d.reps[1]
				d.reps = [3]int{off, d.reps[0], d.reps[2]}
			case 2:
				off = d.reps[2]
				d.reps = [3]int{off, d.reps[0], d.reps[1]}
			default:
				off = d.reps[0] - 1
				if off == 0 {
					return dst, corrupt("repeat offset of zero")
				}
				d.reps = [3]int{off, d.reps[0], d.reps[1]}
			}
		}
		if llen > len(lits) {
			return dst, corrupt("sequence takes %d literals, %d left", llen, len(lits))
		}
		if len(dst)-blockStart+llen+mlen > blockMax {
			return dst, corrupt("block decodes to more than %d bytes", blockMax)
		}
		if int64(len(dst)-start+llen+mlen) > limit {
			return dst, ErrTooLarge
		}
		dst = append(dst, lits[:llen]...)
		lits = lits[llen:]
		if off > len(dst)-start {
			return dst, corrupt("match offset %d before the frame's start", off)
		}
		from := len(dst) - off
		if off >= mlen {
			dst = append(dst, dst[from:from+mlen]...)
		} else {
			for j := range mlen {
				dst = append(dst, dst[from+j])
			}
		}
	}
	if !r.finished() {
		return dst, corrupt("sequences bit stream not used up exactly")
	}
	if len(dst)-blockStart+len(lits) > blockMax {
		return dst, corrupt("block decodes to more than %d bytes", blockMax)
	}
	if int64(len(dst)-start+len(lits)) > limit {
		return dst, ErrTooLarge
	}
	return append(dst, lits...), nil
}
