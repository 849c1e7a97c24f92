package procutil

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// MaxLine bounds one line from a harness (a long session's replay can be
// large, but not unbounded).
const MaxLine = 64 << 20

// ErrLineTooLong is returned by ReadLines for a line over MaxLine.
var ErrLineTooLong error = lineTooLong{}

// lineTooLong is ErrLineTooLong's type: a value made without code at
// package initialisation.
type lineTooLong struct{}

func (lineTooLong) Error() string { return fmt.Sprintf("a line over %d bytes", MaxLine) }

// ReadLines reads newline-delimited lines from r until it ends, calling fn
// with each non-blank line, trimmed (the slice is only valid during the
// call). It returns nil at the end of input, ErrLineTooLong for a line over
// MaxLine, or the read error.
func ReadLines(r io.Reader, fn func(line []byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, chunk...)
			if len(long) > MaxLine {
				return ErrLineTooLong
			}
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			fn(t)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// WriteJSONLine writes v as one line of JSON to w, holding mu so that
// concurrent writers do not interleave.
func WriteJSONLine(mu *sync.Mutex, w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	b = append(b, '\n')
	mu.Lock()
	defer mu.Unlock()
	_, err = w.Write(b)
	return err
}
