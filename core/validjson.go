package core

import "bytes"

// maxJSONDepth is the deepest nesting encoding/json accepts.
const maxJSONDepth = 10000

// validJSON reports what json.Valid does (one JSON value between optional
// white space; any syntax error is false; duplicate names and invalid UTF-8
// inside strings are accepted; nesting deeper than encoding/json's 10,000
// levels is refused) in one pass, without allocating below 32 levels:
// Validate runs on every entry written, an import's millions included, and
// json.Valid takes about twice as long (BenchmarkValidJSON).
func validJSON(b []byte) bool {
	var buf [32]byte
	open := buf[:0] // the open containers, '{' or '['
	i := 0
value:
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch c := b[i]; c {
		case '{', '[':
			if len(open) == maxJSONDepth {
				return false
			}
			open = append(open, c)
			if i = skipSpace(b, i+1); i < len(b) && b[i] == c+2 { // '}' or ']'
				open = open[:len(open)-1]
				i++
				break
			}
			if c == '{' {
				if i = memberName(b, i); i < 0 {
					return false
				}
			}
			continue value
		case '"':
			i = validStringEnd(b, i)
		case 't':
			i = literalEnd(b, i, "true")
		case 'f':
			i = literalEnd(b, i, "false")
		case 'n':
			i = literalEnd(b, i, "null")
		default:
			i = numberEnd(b, i)
		}
		if i < 0 {
			return false
		}
		// After a value: close containers, or go on to the next element.
		for {
			i = skipSpace(b, i)
			if len(open) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := open[len(open)-1]
			switch b[i] {
			case ',':
				if top == '{' {
					if i = memberName(b, skipSpace(b, i+1)); i < 0 {
						return false
					}
				} else {
					i++
				}
				continue value
			case top + 2:
				open = open[:len(open)-1]
				i++
			default:
				return false
			}
		}
	}
}

// memberName checks the name and colon of an object member starting at i
// and returns the index after the colon, or -1.
func memberName(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validStringEnd(b, i); i < 0 {
		return -1
	}
	if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return i + 1
}

// validStringEnd checks the string starting at b[i] == '"' and returns the
// index after its closing quote, or -1.
func validStringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		c := b[j]
		switch {
		case c == '"':
			return j + 1
		case c < 0x20:
			return -1
		case c == '\\':
			j++
			if j >= len(b) {
				return -1
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) {
					return -1
				}
				for _, h := range b[j+1 : j+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return -1
					}
				}
				j += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// literalEnd returns the index after lit at b[i:], or -1.
func literalEnd(b []byte, i int, lit string) int {
	if !bytes.HasPrefix(b[i:], []byte(lit)) {
		return -1
	}
	return i + len(lit)
}

// numberEnd returns the index after the JSON number at b[i:], or -1.
func numberEnd(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digitsEnd(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i+1 >= len(b) || !isDigit(b[i+1]) {
			return -1
		}
		i = digitsEnd(b, i+1)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		i = digitsEnd(b, i)
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func digitsEnd(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}
