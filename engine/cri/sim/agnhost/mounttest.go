package agnhost

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/pflag"
)

// mounttestNewFile is what mounttest writes to a new file.
const mounttestNewFile = "mount-tester new file\n"

// overlayMagic is the file system type of a container's root (overlayfs),
// as statfs reports it: the simulated image layer's.
const overlayMagic = 0x794c7630

// tmpfsMagic is tmpfs's file system type as statfs reports it
// (TMPFS_MAGIC), which mounttest names.
const tmpfsMagic = 0x01021994

// mounttest is agnhost mounttest: it creates the --new_file_* files with
// their modes, then prints the file system type, mode, permissions, owner
// and content of the files its flags name, in agnhost's words, and exits
// 1 if any failed. The volumes' conformance specs read its output.
func (c *cmd) mounttest(ctx context.Context, fs *pflag.FlagSet, args []string) (int, error) {
	str := func(name string) *string { return fs.String(name, "", "") }
	fsType, mode, perm, owner := str("fs_type"), str("file_mode"), str("file_perm"), str("file_owner")
	newFiles := map[os.FileMode]*string{0o644: str("new_file_0644"), 0o666: str("new_file_0666"), 0o660: str("new_file_0660"), 0o777: str("new_file_0777")}
	content, loop := str("file_content"), str("file_content_in_loop")
	retry := fs.Int("retry_time", 180, "")
	breakOnExpected := fs.Bool("break_on_expected_content", true, "")
	if err := fs.Parse(args); err != nil {
		return 1, nil
	}
	out := c.p.Stdout
	failed := false
	check := func(path string, f func(name string) error) {
		if path != "" && f(c.p.Abs(path)) != nil {
			failed = true
		}
	}
	check(*fsType, func(name string) error {
		var st syscall.Statfs_t
		st.Type = overlayMagic
		if h, m, ok := c.p.FS.HostPath(name); ok {
			if err := syscall.Statfs(h, &st); err != nil {
				fmt.Fprintf(out, "error from statfs(%q): %v\n", *fsType, err)
				return err
			}
			if m.Type == "tmpfs" { // the kubelet's tmpfs, on a node that only records it
				st.Type = tmpfsMagic
			}
		}
		kind := strconv.FormatInt(int64(st.Type), 10)
		if st.Type == tmpfsMagic {
			kind = "tmpfs"
		}
		fmt.Fprintf(out, "mount type of %q: %s\n", *fsType, kind)
		return nil
	})
	for _, p := range []os.FileMode{0o644, 0o666, 0o660, 0o777} {
		check(*newFiles[p], func(name string) error { return c.newFile(out, *newFiles[p], name, p) })
	}
	stat := func(path string, show func(os.FileInfo)) func(string) error {
		return func(name string) error {
			info, err := c.p.FS.Stat(name)
			if err != nil {
				fmt.Fprintf(out, "error from Stat(%q): %v\n", path, err)
				return err
			}
			show(info)
			return nil
		}
	}
	check(*mode, stat(*mode, func(i os.FileInfo) { fmt.Fprintf(out, "mode of file %q: %v\n", *mode, i.Mode()) }))
	check(*perm, stat(*perm, func(i os.FileInfo) { fmt.Fprintf(out, "perms of file %q: %v\n", *perm, i.Mode().Perm()) }))
	check(*owner, stat(*owner, func(i os.FileInfo) {
		var uid, gid uint32
		if st, ok := i.Sys().(*syscall.Stat_t); ok {
			uid, gid = st.Uid, st.Gid
		}
		fmt.Fprintf(out, "owner UID of %q: %v\nowner GID of %q: %v\n", *owner, uid, *owner, gid)
	}))
	check(*content, func(name string) error { return c.printContent(out, *content, name) })
	check(*loop, func(name string) error { return c.contentInLoop(ctx, out, *loop, name, *retry, *breakOnExpected) })
	if failed {
		return 1, nil
	}
	return 0, nil
}

// newFile writes mounttest's new file with mode perm (its umask is 0),
// then prints its content.
func (c *cmd) newFile(out io.Writer, path, name string, perm os.FileMode) error {
	w, err := c.p.FS.Open(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err == nil {
		if f, ok := w.(*os.File); ok {
			err = f.Chmod(perm)
		}
		if _, werr := io.WriteString(w, mounttestNewFile); err == nil {
			err = werr
		}
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(out, "error writing new file %q: %v\n", path, err)
		return err
	}
	return c.printContent(out, path, name)
}

// printContent prints a file's content as mounttest does.
func (c *cmd) printContent(out io.Writer, path, name string) error {
	b, err := c.p.FS.ReadFile(name)
	if err != nil {
		fmt.Fprintf(out, "error reading file content for %q: %v\n", path, err)
		return err
	}
	fmt.Fprintf(out, "content of file %q: %v\n", path, string(b))
	return nil
}

// contentInLoop prints a file's content every 2 seconds for retry
// seconds, until it is mounttest's new file's when breakOnExpected.
func (c *cmd) contentInLoop(ctx context.Context, out io.Writer, path, name string, retry int, breakOnExpected bool) error {
	var err error
	for waited := time.Duration(0); waited < time.Duration(retry)*time.Second; waited += 2 * time.Second {
		if waited > 0 {
			if serr := c.p.Sleep(ctx, 2*time.Second); serr != nil {
				return serr
			}
		}
		var b []byte
		if b, err = c.p.FS.ReadFile(name); err != nil {
			fmt.Fprintf(out, "Error reading file %s: %v, retrying\n", path, err)
			continue
		}
		fmt.Fprintf(out, "content of file %q: %v\n", path, string(b))
		if !breakOnExpected {
			continue
		}
		if string(b) == mounttestNewFile {
			break
		}
		fmt.Fprintf(out, "Unexpected content. Expected: %s. Retrying\n", mounttestNewFile)
	}
	return err
}
