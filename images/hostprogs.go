package images

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// hostPrograms returns the files that run progs (paths of dynamically
// linked programs on this host) in an image: each program, every shared
// library `ldd` lists for it and the dynamic loader, each at the path ldd
// gives it, read through symbolic links.
func hostPrograms(ctx context.Context, progs ...string) ([]File, error) {
	seen := map[string]bool{}
	var files []File
	add := func(path string) error {
		if seen[path] {
			return nil
		}
		seen[path] = true
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files = append(files, File{Path: path, Mode: 0o755, Data: b})
		return nil
	}
	for _, p := range progs {
		if err := add(p); err != nil {
			return nil, err
		}
		out, err := exec.CommandContext(ctx, "ldd", p).Output()
		if err != nil {
			return nil, fmt.Errorf("ldd %s: %w", p, err)
		}
		libs, err := lddPaths(out)
		if err != nil {
			return nil, fmt.Errorf("ldd %s: %w", p, err)
		}
		for _, l := range libs {
			if err := add(l); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

// lddPaths are the files ldd's output names: "libx.so => /path (0x…)"
// and the loader's "/lib64/ld-linux-x86-64.so.2 (0x…)"; the vDSO has no
// file. A library ldd cannot find is an error.
func lddPaths(out []byte) ([]string, error) {
	var paths []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			paths = append(paths, f[2])
		case len(f) >= 3 && f[1] == "=>" && f[2] == "not":
			return nil, fmt.Errorf("%s not found", f[0])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			paths = append(paths, f[0])
		}
	}
	return paths, sc.Err()
}
