package proc

import (
	"errors"
	"regexp"
	"strings"
)

// compileBRE compiles a POSIX basic regular expression as glibc's regcomp
// reads one without REG_EXTENDED (GNU's \+, \? and \| included), for
// leftmost-longest matching: \( \) group, \{m,n\} repeats, * is literal
// first in the expression or a group, ^ and $ anchor only at its ends, and
// + ? | ( ) { } are literal. Back-references (\1) and word boundaries
// (\< \>), which Go's regexp lacks, are refused.
//
// As in the C locale a container runs in, it matches bytes, not UTF-8
// characters (`expr é : .` is 1): each byte of the pattern stands for the
// rune of its value, so match it against breBytes(s).
func compileBRE(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("(?s)") // . matches a newline, as without REG_NEWLINE
	first := true         // at the start of the expression, a group or an alternative
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern):
			i++
			out, err := breEscape(pattern[i])
			if err != nil {
				return nil, err
			}
			b.WriteString(out)
			first = pattern[i] == '(' || pattern[i] == '|'
			continue
		case c == '\\':
			return nil, errors.New("Trailing backslash")
		case c == '[':
			class, n, err := breBracket(pattern[i:])
			if err != nil {
				return nil, err
			}
			b.WriteString(class)
			i += n - 1
		case c == '*' && first:
			b.WriteString(`\*`)
		case c == '^' && first:
			b.WriteString("^")
			continue // a * after it is still literal
		case c == '$' && breAtEnd(pattern[i+1:]):
			b.WriteString("$")
		case c == '.' || c == '*':
			b.WriteByte(c)
		default:
			b.WriteString(regexp.QuoteMeta(string(rune(c))))
		}
		first = false
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, err
	}
	re.Longest()
	return re, nil
}

// breEscape translates \c.
func breEscape(c byte) (string, error) {
	switch c {
	case '(', ')', '{', '}', '|', '+', '?':
		return string(c), nil
	case 'w', 'W', 's', 'S', 'b', 'B':
		return `\` + string(c), nil
	case '`':
		return `\A`, nil
	case '\'':
		return `\z`, nil
	case '<', '>':
		return "", errors.New("word boundaries \\< and \\> are not simulated")
	}
	if c >= '1' && c <= '9' {
		return "", errors.New("back-references are not simulated")
	}
	return regexp.QuoteMeta(string(rune(c))), nil
}

// breAtEnd reports whether rest follows a $ that anchors: nothing, or the
// end of a group or an alternative.
func breAtEnd(rest string) bool {
	return rest == "" || strings.HasPrefix(rest, `\)`) || strings.HasPrefix(rest, `\|`)
}

// breBracket translates the bracket expression at the start of s and
// returns it with the length it took: a ] first is a member, a backslash
// is literal, [:class:] is kept, [.c.] and [=c=] are c.
func breBracket(s string) (string, int, error) {
	var b strings.Builder
	b.WriteByte('[')
	i := 1
	if i < len(s) && s[i] == '^' {
		b.WriteByte('^')
		i++
	}
	for start := i; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ']' && i > start:
			b.WriteByte(']')
			return b.String(), i + 1, nil
		case c == '[' && i+1 < len(s) && strings.IndexByte(":.=", s[i+1]) >= 0:
			end := strings.Index(s[i+2:], string(s[i+1])+"]")
			if end < 0 {
				return "", 0, errors.New("Unmatched [, [^, [:, [., or [=")
			}
			inner := s[i+2 : i+2+end]
			if s[i+1] == ':' {
				b.WriteString("[:" + inner + ":]")
			} else {
				b.WriteString(regexp.QuoteMeta(breBytes(inner)))
			}
			i += 2 + end + 1
		case c == '\\' || c == '[' || c == ']':
			b.WriteString(`\` + string(c))
		default:
			b.WriteRune(rune(c))
		}
	}
	return "", 0, errors.New("Unmatched [, [^, [:, [., or [=")
}

// breBytes turns each byte of s into the rune of its value, as
// compileBRE's expressions match.
func breBytes(s string) string {
	r := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		r[i] = rune(s[i])
	}
	return string(r)
}

// breUnbytes undoes breBytes.
func breUnbytes(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = append(b, byte(r))
	}
	return string(b)
}
