package proc

import "testing"

func TestAwk(t *testing.T) {
	fsys := container(t)
	// The Container Runtime blackbox spec's script counts its restarts
	// in a file; each run appends a line (its first runs exit 1, then 0).
	restarts := `f=/data/restartCount
count=$(echo 'hello' >> $f ; wc -l $f | awk {'print $1'})
if [ $count -eq 1 ]; then
	exit 1
fi
if [ $count -eq 2 ]; then
	exit 0
fi
exit 3`
	for i, want := range []int{1, 0, 3} {
		if code, _, stderr := run(t, fsys, false, "sh", "-c", restarts); code != want {
			t.Errorf("run %d of the restart-count script: exit %d (%s), want %d", i+1, code, stderr, want)
		}
	}
	for _, tc := range []struct {
		script         string
		code           int
		stdout, stderr string
	}{
		{`printf 'a b c\nd e f\n' | awk '{print $1}'`, 0, "a\nd\n", ""},
		{`printf 'a  b\tc\n' | awk '{ print $3, $1 }'`, 0, "c a\n", ""},
		{`printf 'x:y:z\n' | awk -F: '{print $2}'`, 0, "y\n", ""},
		// -F as busybox 1.35 reads it.
		{`printf 'a b\n\n  c  d \n' | awk -F ' ' '{print NF}'`, 0, "2\n0\n2\n", ""},
		{`printf 'a\tb c\n\n' | awk -F '\t' '{print NF, $2}'`, 0, "2 b c\n0 \n", ""},
		{`printf 'a:b\n\n' | awk -F: '{print NF}'`, 0, "2\n0\n", ""},
		{`printf 'aAb\n' | awk -F'\101' '{print NF}'`, 0, "2\n", ""},
		// A longer -F is an extended regular expression (busybox's
		// mk_splitter); one character is literal.
		{`printf 'a::b:c\n' | awk -F '::' '{print NF, $2}'`, 0, "2 b:c\n", ""},
		{`printf 'a1b22c\n' | awk -F '[0-9]+' '{print NF, $1, $2, $3}'`, 0, "3 a b c\n", ""},
		{`printf '1a2b3\n' | awk -F 'a|b' '{print $1, $2, $3}'`, 0, "1 2 3\n", ""},
		{`printf 'a\tb  c\n' | awk -F '[ \t]+' '{print NF, $3}'`, 0, "3 c\n", ""},
		{`printf 'ab::\n' | awk -F ':+' '{print NF, $1}'`, 0, "2 ab\n", ""},
		{`printf 'a.b\n' | awk -F '.+' '{print NF}'`, 0, "2\n", ""},
		{`printf 'a  b   c\n' | awk -F ' *' '{print NF, $2, $3}'`, 0, "3 b c\n", ""},
		{`printf 'a.b|c\n' | awk -F. '{print $2}' && printf 'a.b|c\n' | awk -F'|' '{print $2}'`, 0, "b|c\nc\n", ""},
		{`awk -F 'a(' '{print}'`, 1, "", "awk: bad regex 'a(': Unmatched ( or \\(\n"},
		{`printf 'x y\n' | awk '{print NR, NF, $0, $9}'`, 0, "1 2 x y \n", ""},
		{`printf 'x y\n' | awk '{print}'`, 0, "x y\n", ""},
		{`printf 'x y\n' | awk '{print $00, $+0}' | cat`, 0, "x y x y\n", ""},
		{`printf 'x\n' | awk '{print $1"-"NR}'`, 2, "", "awk: only fields, NR, NF and strings are simulated in print, not \"$1\\\"-\\\"NR\"\n"},
		{`awk '/x/ {print}'`, 2, "", "awk: only a { print ... } action is simulated, not \"/x/ {print}\"\n"},
		{`awk '{print $1}' /data/none`, 1, "", "awk: can't open '/data/none': No such file or directory\n"},
	} {
		code, stdout, stderr := run(t, fsys, false, "sh", "-c", tc.script)
		if code != tc.code || stdout != tc.stdout || stderr != tc.stderr {
			t.Errorf("%s: exit %d, %q, %q; want %d, %q, %q", tc.script, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}
