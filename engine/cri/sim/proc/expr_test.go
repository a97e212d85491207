package proc

import (
	"bytes"
	"strings"
	"testing"
)

func TestExpr(t *testing.T) {
	for _, tc := range []struct {
		args           string // split at spaces
		code           int
		stdout, stderr string
	}{
		// The Job specs' fixture: odd indexes fail.
		{"3 % 2", 0, "1", ""},
		{"4 % 2", 1, "0", ""},
		{"1 + 2 * 3", 0, "7", ""},
		{"( 1 + 2 ) * 3", 0, "9", ""},
		{"-7 / 2", 0, "-3", ""},
		{"-7 % 2", 0, "-1", ""},
		{"9223372036854775807 + 1", 0, "-9223372036854775808", ""},
		{"99999999999999999999 = 9223372036854775807", 0, "1", ""},
		{" 5 + 1", 0, "6", ""},
		{"+5 + 1", 0, "6", ""},
		{"1 / 0", 2, "", "expr: division by zero"},
		{"a + 1", 2, "", "expr: non-numeric argument"},
		{"5x + 1", 2, "", "expr: non-numeric argument"},
		// Comparisons: numeric when both are integers, else byte-wise.
		{"10 < 9", 1, "0", ""},
		{"10 < 9a", 0, "1", ""},
		{"abc = abc", 0, "1", ""},
		{"abc == abd", 1, "0", ""},
		{"b >= a", 0, "1", ""},
		{"01 != 1", 1, "0", ""},
		// | and &: null is "" or 0 (the string "0" too).
		{"0 | 5", 0, "5", ""},
		{"7 | 5", 0, "7", ""},
		{"0 | 0", 1, "0", ""},
		{"3 & 0", 1, "0", ""},
		{"3 & 4", 0, "3", ""},
		// Anchored basic regular expressions.
		{"abcdef : abc", 0, "3", ""},
		{"abcdef : bcd", 1, "0", ""},
		{"abcdef : a.*", 0, "6", ""},
		{`abcdef : a\(.*\)e`, 0, "bcd", ""},
		{`abcdef : x\(.*\)`, 1, "", ""},
		{`foo.txt : .*\.\(txt\)$`, 0, "txt", ""},
		{"a+b : a+b", 0, "3", ""},
		// Bytes, as busybox 1.35 matches in the C locale.
		{"é : é", 0, "2", ""},
		{"héllo : h.", 0, "2", ""},
		{`héllo : h\(..\)`, 0, "é", ""},
		{"é : [é]*", 0, "2", ""},
		{`aaa : a\{2\}`, 0, "2", ""},
		{`abc : [[:alpha:]]*`, 0, "3", ""},
		{`a]b : []a]*`, 0, "2", ""},
		{`*x : *x`, 0, "2", ""},
		{`ab : \(a\)\1`, 2, "", `expr: bad regex '\(a\)\1': back-references are not simulated`},
		{"abc : ^ab", 0, "2", "expr: warning: '^ab': using '^' as the first character\nof a basic regular expression is not portable; it is ignored"},
		{"match abc ab", 0, "2", ""},
		// length, substr, index, quote.
		{"length hello", 0, "5", ""},
		{"length 12 + 1", 0, "3", ""},
		{"substr hello 2 3", 0, "ell", ""},
		{"substr hello 4 10", 0, "lo", ""},
		{"substr hello 0 1", 1, "", ""},
		{"substr hello 6 1", 1, "", ""},
		{"index hello lo", 0, "3", ""},
		{"index hello xyz", 1, "0", ""},
		{"quote length", 0, "length", ""},
		{"length quote length", 0, "6", ""},
		// Errors.
		{"", 2, "", "expr: too few arguments"},
		{"1 +", 2, "", "expr: syntax error"},
		{"( 1", 2, "", "expr: syntax error"},
		{"1 2", 2, "", "expr: syntax error"},
		{")", 2, "", "expr: syntax error"},
	} {
		var out, errw bytes.Buffer
		code := expr(&out, &errw, strings.Fields(tc.args))
		wantOut := tc.stdout + "\n"
		if code == 2 {
			wantOut = ""
		}
		wantErr := tc.stderr
		if wantErr != "" {
			wantErr += "\n"
		}
		if code != tc.code || out.String() != wantOut || errw.String() != wantErr {
			t.Errorf("expr %s: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, out.String(), errw.String(), tc.code, wantOut, wantErr)
		}
	}
}

// TestJobScripts runs the scripts of the Job specs' pods
// (k8s.io/kubernetes test/e2e/framework/job/fixtures.go) as their
// containers run them.
func TestJobScripts(t *testing.T) {
	const failOddSucceedEven = `
			if [ $(expr ${JOB_COMPLETION_INDEX} % 2) -ne 0 ]; then
				exit 1
			else
				exit 0
			fi
			`
	const failOncePerIndex = `
			if [[ -r /data/foo-$JOB_COMPLETION_INDEX ]]
			then
				exit 0
			else
				touch /data/foo-$JOB_COMPLETION_INDEX
				exit 42
			fi
		`
	fsys := container(t)
	for _, tc := range []struct {
		script, index string
		code          int
	}{
		{failOddSucceedEven, "0", 0},
		{failOddSucceedEven, "3", 1},
		{failOncePerIndex, "2", 42}, // creates its marker
		{failOncePerIndex, "2", 0},  // finds it
		{failOncePerIndex, "1", 42},
		{"exit $(( $RANDOM / 16384 ))", "0", -1}, // 0 or 1
		{`[ "$RANDOM" -ge 0 ] && [ "$RANDOM" -le 32767 ]`, "0", 0},
		{"exit 1", "0", 1},
	} {
		var out, errw bytes.Buffer
		code, err := Run(t.Context(), Process{Argv: []string{"/bin/sh", "-c", tc.script}, Env: []string{"JOB_COMPLETION_INDEX=" + tc.index},
			FS: fsys, Stdout: &out, Stderr: &errw})
		if err != nil {
			t.Fatal(err)
		}
		if want := tc.code; code != want && !(want == -1 && (code == 0 || code == 1)) {
			t.Errorf("index %s: %q exited %d (stderr %q), want %d", tc.index, tc.script, code, errw.String(), want)
		}
	}
}
