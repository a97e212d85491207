package proc

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// expr evaluates its arguments as busybox's expr does (coreutils/expr.c):
// each token an argument; | and &, the comparisons (numeric when both
// sides are integers, else byte-wise), + - * / % on 64-bit integers,
// STRING : REGEXP (an anchored basic regular expression), match, substr,
// index, length and quote. It prints the value and exits 1 when it is
// null ("" or 0), 0 otherwise, and 2 on an error.
func expr(stdout, stderr io.Writer, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "expr: too few arguments")
		return 2
	}
	e := &exprEval{args: args, stderr: stderr}
	v, err := e.eval()
	if err == nil && len(e.args) > 0 {
		err = errExprSyntax
	}
	if err != nil {
		fmt.Fprintf(stderr, "expr: %v\n", err)
		return 2
	}
	fmt.Fprintln(stdout, v.String())
	if v.null() {
		return 1
	}
	return 0
}

var errExprSyntax = errors.New("syntax error")

// exprValue is an integer or a string, as busybox's VALUE.
type exprValue struct {
	isInt bool
	i     int64
	s     string
}

func exprInt(i int64) exprValue { return exprValue{isInt: true, i: i} }

func exprString(s string) exprValue { return exprValue{s: s} }

// String is the value as expr prints it.
func (v exprValue) String() string {
	if v.isInt {
		return strconv.FormatInt(v.i, 10)
	}
	return v.s
}

// null reports an empty string, "0" or the integer 0.
func (v exprValue) null() bool {
	if v.isInt {
		return v.i == 0
	}
	return v.s == "" || v.s == "0"
}

// arith is v as an integer, read as strtoll does (leading blanks, a sign,
// saturating on overflow), and whether it is one.
func (v exprValue) arith() (exprValue, bool) {
	if v.isInt {
		return v, true
	}
	s := strings.TrimLeft(v.s, " \t\n\v\f\r")
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return v, false
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil { // out of range: strtoll's LLONG_MIN or LLONG_MAX
		i = math.MaxInt64
		if s[0] == '-' {
			i = math.MinInt64
		}
	}
	return exprInt(i), true
}

// exprEval walks the arguments left to right, one precedence level a
// method, as busybox's eval ... eval7 do.
type exprEval struct {
	args   []string
	stderr io.Writer
}

// next takes the next argument when it is one of ops.
func (e *exprEval) next(ops ...string) (string, bool) {
	if len(e.args) == 0 {
		return "", false
	}
	for _, op := range ops {
		if e.args[0] == op {
			e.args = e.args[1:]
			return op, true
		}
	}
	return "", false
}

// binary evaluates operand (op operand)* left to right, combining with do.
func (e *exprEval) binary(operand func() (exprValue, error), do func(op string, l, r exprValue) (exprValue, error), ops ...string) (exprValue, error) {
	l, err := operand()
	for err == nil {
		op, ok := e.next(ops...)
		if !ok {
			return l, nil
		}
		var r exprValue
		if r, err = operand(); err == nil {
			l, err = do(op, l, r)
		}
	}
	return l, err
}

// eval is |: the left value unless it is null, else the right one.
func (e *exprEval) eval() (exprValue, error) {
	return e.binary(e.and, func(_ string, l, r exprValue) (exprValue, error) {
		if l.null() {
			return r, nil
		}
		return l, nil
	}, "|")
}

// and is &: the left value unless either is null, else 0.
func (e *exprEval) and() (exprValue, error) {
	return e.binary(e.compare, func(_ string, l, r exprValue) (exprValue, error) {
		if l.null() || r.null() {
			return exprInt(0), nil
		}
		return l, nil
	}, "&")
}

// compare is < <= = == != >= >: 1 or 0.
func (e *exprEval) compare() (exprValue, error) {
	return e.binary(e.sum, func(op string, l, r exprValue) (exprValue, error) {
		l, _ = l.arith()
		r, _ = r.arith()
		c := 0
		switch {
		case !l.isInt || !r.isInt:
			c = strings.Compare(l.String(), r.String())
		case l.i < r.i:
			c = -1
		case l.i > r.i:
			c = 1
		}
		holds := map[string]bool{"<": c < 0, "<=": c <= 0, "=": c == 0, "==": c == 0, "!=": c != 0, ">=": c >= 0, ">": c > 0}[op]
		if holds {
			return exprInt(1), nil
		}
		return exprInt(0), nil
	}, "<", "<=", "=", "==", "!=", ">=", ">")
}

func (e *exprEval) sum() (exprValue, error) { return e.binary(e.product, arithmetic, "+", "-") }

func (e *exprEval) product() (exprValue, error) { return e.binary(e.match, arithmetic, "*", "/", "%") }

// arithmetic is + - * / % on two integers (wrapping, as C's do).
func arithmetic(op string, l, r exprValue) (exprValue, error) {
	l, lok := l.arith()
	r, rok := r.arith()
	if !lok || !rok {
		return exprValue{}, errors.New("non-numeric argument")
	}
	switch op {
	case "+":
		return exprInt(l.i + r.i), nil
	case "-":
		return exprInt(l.i - r.i), nil
	case "*":
		return exprInt(l.i * r.i), nil
	}
	if r.i == 0 {
		return exprValue{}, errors.New("division by zero")
	}
	if op == "/" {
		return exprInt(l.i / r.i), nil
	}
	return exprInt(l.i % r.i), nil
}

// match is STRING : REGEXP.
func (e *exprEval) match() (exprValue, error) {
	return e.binary(e.keyword, func(_ string, l, r exprValue) (exprValue, error) { return e.colon(l, r) }, ":")
}

// keyword is quote, length, match, index and substr, whose operands are
// themselves keywords or primaries.
func (e *exprEval) keyword() (exprValue, error) {
	key, ok := e.next("quote", "length", "match", "index", "substr")
	if !ok {
		return e.primary()
	}
	if key == "quote" {
		if len(e.args) == 0 {
			return exprValue{}, errExprSyntax
		}
		v := exprString(e.args[0])
		e.args = e.args[1:]
		return v, nil
	}
	operands := map[string]int{"length": 1, "match": 2, "index": 2, "substr": 3}[key]
	vs := make([]exprValue, operands)
	for i := range vs {
		v, err := e.keyword()
		if err != nil {
			return exprValue{}, err
		}
		vs[i] = v
	}
	s := vs[0].String()
	switch key {
	case "length":
		return exprInt(int64(len(s))), nil
	case "match":
		return e.colon(vs[0], vs[1])
	case "index": // strcspn + 1, or 0 when none of the characters is there
		chars := vs[1].String()
		for i := 0; i < len(s); i++ {
			if strings.IndexByte(chars, s[i]) >= 0 {
				return exprInt(int64(i + 1)), nil
			}
		}
		return exprInt(0), nil
	}
	pos, pok := vs[1].arith()
	n, nok := vs[2].arith()
	if !pok || !nok || pos.i > int64(len(s)) || pos.i <= 0 || n.i <= 0 {
		return exprString(""), nil
	}
	return exprString(s[pos.i-1 : pos.i-1+min(n.i, int64(len(s))-pos.i+1)]), nil
}

// primary is ( EXPRESSION ) or a token.
func (e *exprEval) primary() (exprValue, error) {
	if len(e.args) == 0 {
		return exprValue{}, errExprSyntax
	}
	if _, ok := e.next("("); ok {
		v, err := e.eval()
		if err != nil {
			return v, err
		}
		if _, ok := e.next(")"); !ok {
			return v, errExprSyntax
		}
		return v, nil
	}
	if e.args[0] == ")" {
		return exprValue{}, errExprSyntax
	}
	v := exprString(e.args[0])
	e.args = e.args[1:]
	return v, nil
}

// colon matches the basic regular expression pattern at the start of s:
// the text of its first \(...\) group, or the length matched; on no
// match "" with a group, 0 without.
func (e *exprEval) colon(sv, pv exprValue) (exprValue, error) {
	s, pattern := sv.String(), pv.String()
	if strings.HasPrefix(pattern, "^") {
		fmt.Fprintf(e.stderr, "expr: warning: '%s': using '^' as the first character\n"+
			"of a basic regular expression is not portable; it is ignored\n", pattern)
	}
	re, err := compileBRE(pattern)
	if err != nil {
		return exprValue{}, fmt.Errorf("bad regex '%s': %v", pattern, err)
	}
	s = breBytes(s)
	m := re.FindStringSubmatchIndex(s)
	switch {
	case m == nil || m[0] != 0:
		if re.NumSubexp() > 0 {
			return exprString(""), nil
		}
		return exprInt(0), nil
	case re.NumSubexp() > 0 && m[2] >= 0:
		return exprString(breUnbytes(s[m[2]:m[3]])), nil
	}
	return exprInt(int64(utf8.RuneCountInString(s[:m[1]]))), nil
}
