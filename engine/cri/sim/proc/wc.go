package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/interp"
)

// wcCounts are wc's columns, in busybox's order: lines, words, characters
// (-m), bytes (-c), the longest line's length (-L).
type wcCounts [5]int

// wcFlags are the options that pick each column of wcCounts.
const wcFlags = "lwmcL"

// count adds r's counts to n.
func (n *wcCounts) count(r io.Reader) error {
	br := bufio.NewReader(r)
	inWord, lineLen := false, 0
	for {
		ch, size, err := br.ReadRune()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if ch == utf8.RuneError && size == 1 {
			n[2]-- // a byte that is no character
		}
		n[2]++
		n[3] += size
		switch {
		case ch == '\n':
			n[0]++
			lineLen = 0
		case ch == '\t':
			lineLen += 8 - lineLen%8
		default:
			lineLen++
		}
		n[4] = max(n[4], lineLen)
		if unicode.IsSpace(ch) {
			inWord = false
		} else if !inWord {
			inWord = true
			n[1]++
		}
	}
}

// wc is busybox's wc [-lwmcL] [FILE...]: lines, words and bytes by
// default; with one column and at most one file the count is unpadded
// ("2 /data/f"), else each column is nine wide; standard input has no
// name, and several files end with a total.
func (c *commands) wc(hc interp.HandlerContext, args []string) error {
	show := ""
	var files []string
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && strings.Trim(a[1:], wcFlags) == "" {
			show += a[1:]
			continue
		}
		files = append(files, a)
	}
	if show == "" {
		show = "lwc"
	}
	var cols []int
	for i, f := range wcFlags {
		if strings.ContainsRune(show, f) {
			cols = append(cols, i)
		}
	}
	padded := len(cols) > 1 || len(files) > 1
	print := func(n wcCounts, name string) {
		for i, col := range cols {
			switch {
			case i > 0:
				fmt.Fprintf(hc.Stdout, " %9d", n[col])
			case padded:
				fmt.Fprintf(hc.Stdout, "%9d", n[col])
			default:
				fmt.Fprintf(hc.Stdout, "%d", n[col])
			}
		}
		if name != "" {
			fmt.Fprint(hc.Stdout, " "+name)
		}
		fmt.Fprintln(hc.Stdout)
	}
	var total wcCounts
	code := 0
	read := func(name string) (wcCounts, error) {
		var n wcCounts
		if name == "" || name == "-" {
			if hc.Stdin == nil {
				return n, nil
			}
			return n, n.count(hc.Stdin)
		}
		f, err := c.p.FS.Open(abs(hc.Dir, name), os.O_RDONLY, 0)
		if err != nil {
			return n, err
		}
		defer f.Close()
		return n, n.count(f)
	}
	names := files
	if len(names) == 0 {
		names = []string{""}
	}
	for _, name := range names {
		n, err := read(name)
		if err != nil {
			fmt.Fprintf(hc.Stderr, "wc: %s: %s\n", name, Reason(err))
			code = 1
			continue
		}
		print(n, name)
		for i := range 4 {
			total[i] += n[i]
		}
		total[4] = max(total[4], n[4])
	}
	if len(files) > 1 {
		print(total, "total")
	}
	return exitStatus(code)
}
