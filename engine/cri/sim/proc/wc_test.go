package proc

import "testing"

// The expected output is busybox 1.35's (Debian's busybox-static), run on
// the same files.
func TestWcAnswersAsBusybox(t *testing.T) {
	fsys := container(t)
	if code, _, stderr := run(t, fsys, false, "sh", "-c", `printf 'one two\nthree\tfour five\n' > /data/a; printf 'x\n' > /data/b`); code != 0 {
		t.Fatal(stderr)
	}
	for _, tc := range []struct {
		script         string
		code           int
		stdout, stderr string
	}{
		{"cd /data && wc -l a", 0, "2 a\n", ""},
		{"cd /data && wc a", 0, "        2         5        24 a\n", ""},
		{"cd /data && wc -c a b", 0, "       24 a\n        2 b\n       26 total\n", ""},
		{"cd /data && wc -lw a", 0, "        2         5 a\n", ""},
		{"cd /data && wc -L a", 0, "17 a\n", ""},
		{"cd /data && wc -m a", 0, "24 a\n", ""},
		{"cat /data/a | wc -l", 0, "2\n", ""},
		{"cat /data/a | wc", 0, "        2         5        24\n", ""},
		{"wc -l - < /data/a", 0, "2 -\n", ""},
		{"printf 'h\\303\\251llo\\n' | wc -m -c", 0, "        6         7\n", ""},
		{"cd /data && wc a missing", 1, "        2         5        24 a\n        2         5        24 total\n", "wc: missing: No such file or directory\n"},
	} {
		code, stdout, stderr := run(t, fsys, false, "sh", "-c", tc.script)
		if code != tc.code || stdout != tc.stdout || stderr != tc.stderr {
			t.Errorf("%s: exit %d, %q, %q; want %d, %q, %q", tc.script, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}
