package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/interp"
)

// awkProgram is the one form of awk program the simulation runs: a single
// action that prints fields, "{ print $1 }" or "{print $9, $5}" (what
// Kubernetes' e2e scripts pipe wc, df, ls and mount through). items are
// the print statement's arguments: "$N" fields, NR, NF, or strings.
type awkProgram struct{ items [][]string }

// parseAwk parses src, the program text after the shell's quoting, or
// says why the simulation cannot run it.
func parseAwk(src string) (awkProgram, error) {
	s := strings.TrimSpace(src)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return awkProgram{}, fmt.Errorf("only a { print ... } action is simulated, not %q", src)
	}
	s = strings.TrimSpace(s[1 : len(s)-1])
	s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
	if s != "print" && !strings.HasPrefix(s, "print ") && !strings.HasPrefix(s, "print\t") {
		return awkProgram{}, fmt.Errorf("only a { print ... } action is simulated, not %q", src)
	}
	var p awkProgram
	for _, arg := range strings.Split(strings.TrimSpace(s[len("print"):]), ",") {
		if arg = strings.TrimSpace(arg); arg == "" {
			continue
		}
		parts := strings.Fields(arg) // juxtaposed items concatenate
		for _, it := range parts {
			if !validAwkItem(it) {
				return awkProgram{}, fmt.Errorf("only fields, NR, NF and strings are simulated in print, not %q", it)
			}
		}
		p.items = append(p.items, parts)
	}
	return p, nil
}

// validAwkItem reports whether item is a field ($N), NR, NF or a string
// without spaces.
func validAwkItem(item string) bool {
	switch {
	case item == "NR" || item == "NF":
		return true
	case strings.HasPrefix(item, "$"):
		n, err := strconv.Atoi(item[1:])
		return err == nil && n >= 0
	case len(item) >= 2 && item[0] == '"' && item[len(item)-1] == '"':
		return true
	}
	return false
}

// awkSplitter splits a line into fields as busybox's awk does by its FS
// (mk_splitter): on runs of blanks when FS is "" or " ", on a single
// other character taken literally, and on matches of FS as an extended
// regular expression when it is longer.
type awkSplitter struct {
	sep string
	re  *regexp.Regexp // FS longer than a byte, matched byte by byte (breBytes)
}

// regcompErrors are glibc's regerror texts for Go's syntax errors.
var regcompErrors = map[syntax.ErrorCode]string{
	syntax.ErrMissingParen:          "Unmatched ( or \\(",
	syntax.ErrMissingBracket:        "Unmatched [, [^, [:, [., or [=",
	syntax.ErrMissingRepeatArgument: "Invalid preceding regular expression",
	syntax.ErrInvalidRepeatSize:     "Invalid content of \\{\\}",
	syntax.ErrTrailingBackslash:     "Trailing backslash",
	syntax.ErrInvalidCharRange:      "Invalid range end",
}

// newAwkSplitter returns the splitter of FS sep, or busybox's error for
// a regular expression it cannot compile.
func newAwkSplitter(sep string) (awkSplitter, error) {
	if len(sep) <= 1 {
		return awkSplitter{sep: sep}, nil
	}
	re, err := regexp.Compile("(?s)" + breBytes(sep))
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			err = errors.New(se.Code.String())
			if reason, ok := regcompErrors[se.Code]; ok {
				err = errors.New(reason)
			}
		}
		return awkSplitter{}, fmt.Errorf("bad regex '%s': %v", sep, err)
	}
	re.Longest() // POSIX regexec's leftmost-longest match
	return awkSplitter{sep: sep, re: re}, nil
}

// split returns line's fields; an empty line has none.
func (a awkSplitter) split(line string) []string {
	switch {
	case a.sep == "" || a.sep == " ":
		return strings.Fields(line)
	case line == "":
		return nil
	case a.re == nil:
		return strings.Split(line, a.sep)
	}
	// busybox's awk_split: a field up to each delimiter, the first
	// non-empty match of FS; a delimiter at the end leaves an empty field.
	s := breBytes(line)
	var fields []string
	for s != "" {
		loc := awkNonEmptyMatch(a.re, s)
		if loc == nil {
			return append(fields, breUnbytes(s))
		}
		fields = append(fields, breUnbytes(s[:loc[0]]))
		s = s[loc[1]:]
	}
	return append(fields, "")
}

// awkNonEmptyMatch is busybox's regexec1_nonempty: re's leftmost match
// in s, but for an empty match at s's start the first that is not, as
// re matches s from one byte on, then two, and so on (gawk's rule: -F ' *'
// splits on runs of spaces, not between every character).
func awkNonEmptyMatch(re *regexp.Regexp, s string) []int {
	for ofs := 0; ofs < len(s); ofs++ {
		loc := re.FindStringIndex(s[ofs:])
		if loc == nil {
			return nil
		}
		if loc[1] > 0 {
			return []int{ofs + loc[0], ofs + loc[1]}
		}
	}
	return nil
}

// run prints each input line's items, separated by a space, fields split
// by fs.
func (p awkProgram) run(out io.Writer, in io.Reader, fs awkSplitter) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for nr := 1; sc.Scan(); nr++ {
		line := sc.Text()
		fields := fs.split(line)
		if len(p.items) == 0 {
			fmt.Fprintln(out, line)
			continue
		}
		vals := make([]string, len(p.items))
		for i, parts := range p.items {
			var b strings.Builder
			for _, it := range parts {
				b.WriteString(awkValue(it, line, fields, nr))
			}
			vals[i] = b.String()
		}
		fmt.Fprintln(out, strings.Join(vals, " "))
	}
	return sc.Err()
}

// awkValue is item's value on a line.
func awkValue(item, line string, fields []string, nr int) string {
	switch {
	case item == "NR":
		return strconv.Itoa(nr)
	case item == "NF":
		return strconv.Itoa(len(fields))
	case strings.HasPrefix(item, "$"):
		n, _ := strconv.Atoi(item[1:])
		if n == 0 { // $0, $00, $+0
			return line
		}
		if n <= len(fields) {
			return fields[n-1]
		}
		return ""
	}
	return strings.Trim(item, `"`)
}

// awkEscapes are the backslash escapes busybox's awk reads in -F's
// separator (unescape_string_in_place), besides octal \NNN.
var awkEscapes = map[byte]byte{'n': '\n', 't': '\t', 'r': '\r', 'a': '\a', 'b': '\b', 'f': '\f', 'v': '\v', '\\': '\\', '"': '"', '/': '/'}

// awkUnescape unescapes s as busybox's awk does -F's argument: -F '\t'
// splits on tabs. Other escaped characters stand for themselves.
func awkUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		n := 0
		for n < 3 && i+n < len(s) && s[i+n] >= '0' && s[i+n] <= '7' {
			n++
		}
		if v, err := strconv.ParseUint(s[i:i+n], 8, 8); n > 0 && err == nil {
			b.WriteByte(byte(v))
			i += n - 1
		} else if c, ok := awkEscapes[s[i]]; ok {
			b.WriteByte(c)
		} else {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// awk is busybox's awk for the programs awkProgram knows: awk [-F SEP]
// PROGRAM [FILE...]. Any other program fails with exit status 2, as a
// syntax error does, saying it is not simulated.
func (c *commands) awk(hc interp.HandlerContext, args []string) error {
	sep := ""
	for len(args) > 0 && strings.HasPrefix(args[0], "-F") {
		if args[0] == "-F" && len(args) > 1 {
			sep, args = args[1], args[2:]
		} else {
			sep, args = args[0][2:], args[1:]
		}
		sep = awkUnescape(sep)
	}
	if len(args) == 0 {
		fmt.Fprintln(hc.Stderr, "awk: no program")
		return exitStatus(2)
	}
	fs, err := newAwkSplitter(sep) // busybox sets FS before it parses
	if err != nil {
		fmt.Fprintf(hc.Stderr, "awk: %v\n", err)
		return exitStatus(1)
	}
	p, err := parseAwk(args[0])
	if err != nil {
		fmt.Fprintf(hc.Stderr, "awk: %v\n", err)
		return exitStatus(2)
	}
	return c.each(hc, "awk", args[1:], func(r io.Reader) error { return p.run(hc.Stdout, r, fs) })
}
