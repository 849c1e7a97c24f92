package handoff

import "unicode"

// isCJK reports whether r is a Han, Hiragana, Katakana or Hangul character.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// DetectLang returns "zh" when more than 15% of the first 4,000 characters
// of text are CJK, else "en".
func DetectLang(text string) string {
	n, cjk := 0, 0
	for _, r := range text {
		if n == 4000 {
			break
		}
		n++
		if isCJK(r) {
			cjk++
		}
	}
	if n > 0 && cjk*100 > n*15 {
		return "zh"
	}
	return "en"
}
