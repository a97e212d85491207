package proc

import (
	"bufio"
	"fmt"
	"io"
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

// run prints each input line's items, separated by a space, fields split
// on runs of blanks (when sep is "" or " ", as awk's default FS) or on sep.
func (p awkProgram) run(out io.Writer, in io.Reader, sep string) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for nr := 1; sc.Scan(); nr++ {
		line := sc.Text()
		var fields []string
		switch {
		case sep == "" || sep == " ":
			fields = strings.Fields(line)
		case line != "": // an empty line has no fields
			fields = strings.Split(line, sep)
		}
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
	p, err := parseAwk(args[0])
	if err != nil {
		fmt.Fprintf(hc.Stderr, "awk: %v\n", err)
		return exitStatus(2)
	}
	return c.each(hc, "awk", args[1:], func(r io.Reader) error { return p.run(hc.Stdout, r, sep) })
}
