package images

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestLddPaths(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []string
		err       bool
	}{
		{name: "libraries and the loader", out: "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n",
			want: []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}},
		{name: "a static program", out: "\tnot a dynamic executable\n"},
		{name: "a missing library", out: "\tlibgone.so.1 => not found\n", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lddPaths([]byte(tc.out))
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("paths %q, want %q", got, tc.want)
			}
		})
	}
}

// TestHostPrograms copies a dynamically linked program of the host with
// its C library and loader.
func TestHostPrograms(t *testing.T) {
	if _, err := exec.LookPath("ldd"); err != nil {
		t.Skip("no ldd")
	}
	files, err := hostPrograms(context.Background(), "/usr/bin/env")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		if len(f.Data) == 0 {
			t.Errorf("%s is empty", f.Path)
		}
		paths = append(paths, f.Path)
	}
	for _, want := range []string{"/usr/bin/env", "libc.so.6", "ld-linux"} {
		if !slices.ContainsFunc(paths, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("files %q, want one named %s", paths, want)
		}
	}
}
