package postgres

import (
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// The search index's words are made in Go, not by PostgreSQL's text
// search parser: the text is split into runs of letters and digits (as
// SQLite's unicode61 tokenizer splits it), folded to lower case without
// diacritics, and handed to the server as a tsvector literal with each
// word's positions. So the same words are found whatever the server's
// locale or text search configuration, and a query's words are made the
// same way (tsquery literals, search.go).

// token is one word of a text: its folded form and where it is (bytes).
type token struct {
	word     string
	from, to int
}

// tokenize splits s into words; it stops after max tokens when max > 0.
func tokenize(s string, max int) []token {
	var out []token
	start := -1
	for i, r := range s {
		if record.IsWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, token{fold(s[start:i]), start, i})
			start = -1
			if max > 0 && len(out) >= max {
				return out
			}
		}
	}
	if start >= 0 {
		out = append(out, token{fold(s[start:]), start, len(s)})
	}
	return out
}

// maxLexeme bounds a word's bytes (PostgreSQL refuses lexemes of 2 KiB).
const maxLexeme = 1024

// fold lower-cases w and removes the diacritics of Latin letters.
func fold(w string) string {
	var b strings.Builder
	b.Grow(len(w))
	for _, r := range w {
		r = unicode.ToLower(r)
		if base, ok := foldTable[r]; ok {
			b.WriteString(base)
			continue
		}
		if unicode.Is(unicode.Mn, r) { // a combining mark
			continue
		}
		b.WriteRune(r)
	}
	s := b.String()
	if len(s) > maxLexeme {
		s = strings.ToValidUTF8(s[:maxLexeme], "")
	}
	return s
}

// foldTable maps the lower-case Latin letters with diacritics (Latin-1
// Supplement, Latin Extended-A) to their base letters.
var foldTable = func() map[rune]string {
	m := map[rune]string{}
	for base, runes := range map[string]string{
		"a": "àáâãäåāăą", "c": "çćĉċč", "d": "ďđ", "e": "èéêëēĕėęě", "g": "ĝğġģ", "h": "ĥħ",
		"i": "ìíîïĩīĭįı", "j": "ĵ", "k": "ķ", "l": "ĺļľŀł", "n": "ñńņňŉ", "o": "òóôõöøōŏő",
		"r": "ŕŗř", "s": "śŝşš", "t": "ţťŧ", "u": "ùúûüũūŭůűų", "w": "ŵ", "y": "ýÿŷ", "z": "źżž",
		"ae": "æ", "oe": "œ", "ss": "ß", "th": "þ", "dh": "ð",
	} {
		for _, r := range runes {
			m[r] = base
		}
	}
	return m
}()

// maxPosition is the largest word position a tsvector holds; words past
// it share it (a phrase there may match loosely).
const maxPosition = 16383

// maxPositions is how many positions of one word a tsvector keeps.
const maxPositions = 255

// tsvectorOf is the tsvector literal of text's words ("" for none).
func tsvectorOf(text string) string {
	toks := tokenize(text, 0)
	if len(toks) == 0 {
		return ""
	}
	pos := map[string][]int{}
	for i, t := range toks {
		if t.word == "" {
			continue
		}
		p := pos[t.word]
		if len(p) < maxPositions {
			pos[t.word] = append(p, min(i+1, maxPosition))
		}
	}
	words := make([]string, 0, len(pos))
	for w := range pos {
		words = append(words, w)
	}
	sort.Strings(words)
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteLexeme(w))
		b.WriteByte(':')
		last := 0
		for j, p := range pos[w] {
			if p == last { // positions clamped at the end: once
				continue
			}
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(p))
			last = p
		}
	}
	return b.String()
}

// quoteLexeme quotes a word for a tsvector or tsquery literal. Words hold
// no ASCII punctuation, so no quote or backslash; the check is for safety.
func quoteLexeme(w string) string {
	if strings.ContainsAny(w, `'\`) {
		w = strings.NewReplacer(`'`, `''`, `\`, `\\`).Replace(w)
	}
	return "'" + w + "'"
}

// searchText is what insertEntries stores for an entry: the tsvector
// literal of its searchable text ("" for none).
func searchText(kind core.Kind, payload []byte) string {
	return tsvectorOf(record.SearchText(kind, payload))
}
