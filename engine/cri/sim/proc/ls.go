package proc

import (
	"fmt"
	"io"
	"io/fs"
	"strings"

	"mvdan.cc/sh/v3/interp"
)

// ls lists targets (the working directory when none) as busybox's ls
// does: names, or with -l modes, sizes and names; -a shows dot files.
func (c *commands) ls(hc interp.HandlerContext, args []string) error {
	fl := strings.Join(flags(args), "")
	long, all := strings.Contains(fl, "l"), strings.Contains(fl, "a")
	targets := operands(args)
	if len(targets) == 0 {
		targets = []string{"."}
	}
	code := 0
	for i, t := range targets {
		name := abs(hc.Dir, t)
		info, err := c.p.FS.Stat(name)
		if err != nil {
			fmt.Fprintf(hc.Stderr, "ls: %s: No such file or directory\n", t)
			code = 1
			continue
		}
		if !info.IsDir() {
			printEntry(hc.Stdout, info, t, long)
			continue
		}
		if len(targets) > 1 {
			if i > 0 {
				fmt.Fprintln(hc.Stdout)
			}
			fmt.Fprintf(hc.Stdout, "%s:\n", t)
		}
		entries, err := c.p.FS.ReadDir(name)
		if err != nil {
			fmt.Fprintf(hc.Stderr, "ls: %s: %s\n", t, Reason(err))
			code = 1
			continue
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") && !all {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue
			}
			printEntry(hc.Stdout, info, e.Name(), long)
		}
	}
	return exitStatus(code)
}

func printEntry(w io.Writer, info fs.FileInfo, name string, long bool) {
	if !long {
		fmt.Fprintln(w, name)
		return
	}
	fmt.Fprintf(w, "%s    1 root     root     %8d %s %s\n", info.Mode(), info.Size(), info.ModTime().UTC().Format("Jan  2 15:04"), name)
}
