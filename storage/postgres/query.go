package postgres

// The query language of search on PostgreSQL: Bridge's documented forms
// (words, "phrases", OR, NOT, prefix*, parentheses) translated into a
// tsquery literal.

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// tsQuery is a query made for PostgreSQL: the tsquery literal that
// selects the hits, and for plain words the phrase that ranks first.
type tsQuery struct {
	match  string // "" when the query has no words (it matches nothing)
	phrase string // "" when there is no phrase ranking
	terms  []term // the words to highlight
	// narrow: every match must hold two words or more (words ANDed, a
	// phrase), so a query's matches are few enough to read them all;
	// otherwise (one word, OR, NOT, a prefix alone) searchSQL reads the
	// newest rows first.
	narrow bool
}

// term is a word of the query: a folded word, or a prefix.
type term struct {
	word   string
	prefix bool
}

// buildQuery translates Bridge's search syntax into a tsquery literal:
//
//	plain words          every word ('a' & 'b'), holding them as one phrase ranks first
//	"a phrase"           the words one after the other ('a' <-> 'phrase')
//	word*  "a phr"*      a prefix ('word':*), a phrase ending in one
//	a OR b, a AND b      either, both (AND is also implied between terms)
//	a NOT b              a without b
//	( … )                grouping
//
// as SQLite's FTS5 reads them. A word of several parts ("file.go") is the
// phrase of its parts, as FTS5 makes it. NEAR, column filters (':', '{}'),
// '^' and '+' are FTS5's alone: refused, with what to write instead.
func buildQuery(in string) (tsQuery, error) {
	s := strings.TrimSpace(in)
	if s == "" {
		return tsQuery{}, record.QueryError("search query is empty")
	}
	if !record.UsesSyntax(s) {
		var parts, words []string
		var terms []term
		for _, w := range strings.Fields(s) {
			p, ts := phraseOf(w, false)
			if p == "" {
				continue
			}
			parts = append(parts, p)
			terms = append(terms, ts...)
			for _, t := range ts {
				words = append(words, quoteLexeme(t.word))
			}
		}
		q := tsQuery{match: strings.Join(parts, " & "), terms: terms, narrow: len(terms) > 1}
		if len(parts) > 1 {
			q.phrase = strings.Join(words, " <-> ")
		}
		return q, nil
	}
	p := &queryParser{src: s}
	if err := p.lex(); err != nil {
		return tsQuery{}, err
	}
	if len(p.toks) == 0 {
		return tsQuery{}, nil
	}
	expr, err := p.or()
	if err != nil {
		return tsQuery{}, err
	}
	if p.i < len(p.toks) {
		return tsQuery{}, p.invalid(fmt.Sprintf("unexpected %q", p.toks[p.i].text))
	}
	return tsQuery{match: expr, terms: p.terms, narrow: p.narrow}, nil
}

// phraseOf is the tsquery of one word or phrase: its words in order
// ('a' <-> 'b'), the last a prefix when prefix is set; "" when it holds no
// word.
func phraseOf(text string, prefix bool) (string, []term) {
	toks := tokenize(text, 0)
	var parts []string
	var terms []term
	for i, t := range toks {
		if t.word == "" {
			continue
		}
		q := quoteLexeme(t.word)
		pre := prefix && i == len(toks)-1
		if pre {
			q += ":*"
		}
		parts = append(parts, q)
		terms = append(terms, term{t.word, pre})
	}
	switch len(parts) {
	case 0:
		return "", nil
	case 1:
		return parts[0], terms
	}
	return "(" + strings.Join(parts, " <-> ") + ")", terms
}

type qtok struct {
	kind byte // 'w' word, 'p' phrase, '(' ')', 'A' AND, 'O' OR, 'N' NOT
	text string
	star bool
}

type queryParser struct {
	src   string
	toks  []qtok
	i     int
	terms []term
	depth int // of parentheses
	// narrow: the query outside parentheses is an AND of two operands or
	// more, or one phrase of several words (tsQuery.narrow).
	narrow bool
}

func (p *queryParser) invalid(why string) error {
	hint := "; to find the text itself, put it in double quotes"
	if len(p.src) <= 80 && !strings.ContainsFunc(p.src, unicode.IsControl) {
		hint += ": " + `"` + strings.ReplaceAll(p.src, `"`, `""`) + `"`
	}
	return record.QueryError("search query %s is not valid: %s%s", core.Quote(p.src), why, hint)
}

// lex splits the query into words, phrases, parentheses and operators.
func (p *queryParser) lex() error {
	s := p.src
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')':
			p.toks = append(p.toks, qtok{kind: c, text: string(c)})
			i++
		case c == '"':
			var b strings.Builder
			j := i + 1
			closed := false
			for j < len(s) {
				if s[j] == '"' {
					if j+1 < len(s) && s[j+1] == '"' { // "" is a quote
						b.WriteByte('"')
						j += 2
						continue
					}
					closed = true
					j++
					break
				}
				b.WriteByte(s[j])
				j++
			}
			if !closed {
				return p.invalid("a double quote is not closed")
			}
			t := qtok{kind: 'p', text: b.String()}
			if j < len(s) && s[j] == '*' {
				t.star = true
				j++
			}
			p.toks = append(p.toks, t)
			i = j
		case c == '*':
			return p.invalid("'*' must follow a word or a phrase (word*)")
		case strings.IndexByte("^:{}+", c) >= 0:
			return p.invalid(fmt.Sprintf("%q is SQLite FTS5 syntax that search on PostgreSQL does not have (column filters, '^', '+')", string(c)))
		default:
			j := i
			for j < len(s) && strings.IndexByte(" \t\n\r()\"*^:{}+", s[j]) < 0 {
				j++
			}
			w := s[i:j]
			t := qtok{kind: 'w', text: w}
			switch w {
			case "AND":
				t.kind = 'A'
			case "OR":
				t.kind = 'O'
			case "NOT":
				t.kind = 'N'
			case "NEAR":
				return p.invalid("NEAR is SQLite FTS5 syntax that search on PostgreSQL does not have; use a phrase in double quotes")
			}
			if j < len(s) && s[j] == '*' {
				if t.kind != 'w' {
					return p.invalid("'*' must follow a word or a phrase (word*)")
				}
				t.star = true
				j++
			}
			p.toks = append(p.toks, t)
			i = j
		}
	}
	return nil
}

func (p *queryParser) peek() byte {
	if p.i < len(p.toks) {
		return p.toks[p.i].kind
	}
	return 0
}

// or := and ("OR" and)*
func (p *queryParser) or() (string, error) {
	top, ors := p.depth == 0, false
	defer func() {
		if top && ors {
			p.narrow = false // either side alone matches
		}
	}()
	left, err := p.and()
	if err != nil {
		return "", err
	}
	for p.peek() == 'O' {
		ors = true
		p.i++
		right, err := p.and()
		if err != nil {
			return "", err
		}
		left = join(left, " | ", right)
	}
	return left, nil
}

// and := not (["AND"] not)*
func (p *queryParser) and() (string, error) {
	terms := len(p.terms)
	left, err := p.not()
	if err != nil {
		return "", err
	}
	top := p.depth == 0
	if top {
		// one phrase of several words
		p.narrow = len(p.terms)-terms > 1 && strings.Contains(left, "<->")
	}
	for {
		switch p.peek() {
		case 'A':
			p.i++
		case 'w', 'p', '(':
		default:
			return left, nil
		}
		right, err := p.not()
		if err != nil {
			return "", err
		}
		if top && left != "" && right != "" {
			p.narrow = true
		}
		left = join(left, " & ", right)
	}
}

// not := primary ("NOT" primary)*
func (p *queryParser) not() (string, error) {
	left, err := p.primary()
	if err != nil {
		return "", err
	}
	for p.peek() == 'N' {
		p.i++
		terms := len(p.terms)
		right, err := p.primary()
		if err != nil {
			return "", err
		}
		p.terms = p.terms[:terms] // words after NOT are not highlighted
		if right != "" {
			if left == "" {
				return "", p.invalid("NOT needs words before it (a NOT b)")
			}
			left = "(" + left + " & !" + right + ")"
		}
	}
	return left, nil
}

// primary := "(" or ")" | word["*"] | phrase["*"]
func (p *queryParser) primary() (string, error) {
	if p.i >= len(p.toks) {
		return "", p.invalid("it ends in the middle of an expression (an open parenthesis or quote, or an operator without a word after it)")
	}
	t := p.toks[p.i]
	p.i++
	switch t.kind {
	case '(':
		p.depth++
		e, err := p.or()
		p.depth--
		if err != nil {
			return "", err
		}
		if p.peek() != ')' {
			return "", p.invalid("a parenthesis is not closed")
		}
		p.i++
		if e == "" {
			return "", nil
		}
		return "(" + e + ")", nil
	case 'w', 'p':
		q, ts := phraseOf(t.text, t.star)
		p.terms = append(p.terms, ts...)
		return q, nil
	}
	return "", p.invalid(fmt.Sprintf("unexpected %q", t.text))
}

// join joins two tsquery parts with op, either of which may be empty (a
// word without letters or digits).
func join(a, op, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + op + b
}
