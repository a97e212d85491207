package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/interp"
)

// commands are the simulated programs of a process, as busybox's applets
// answer (their messages included).
type commands struct{ p Process }

// silent commands succeed without output: what they would change or print
// is not simulated.
var silent = map[string]bool{"true": true, "chmod": true, "chown": true, "ln": true,
	"sync": true, "kill": true, "ulimit": true, "stty": true, "clear": true}

// run is the interpreter's exec handler: every command not built into the
// shell comes here, and none reaches the host.
func (c *commands) run(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	name, rest := path.Base(args[0]), args[1:]
	out, errw := hc.Stdout, hc.Stderr
	fail := func(format string, a ...any) error {
		fmt.Fprintf(errw, name+": "+format+"\n", a...)
		return interp.ExitStatus(1)
	}
	switch {
	case IsShell(name):
		return c.nested(ctx, hc, args, environ(hc.Env))
	case silent[name]:
		return nil
	case interp.IsBuiltin(name): // /bin/echo, /bin/true, /usr/bin/test: as the shell's own
		return hc.Builtin(ctx, append([]string{name}, rest...))
	}
	switch name {
	case "sleep":
		if len(rest) == 0 {
			return fail("missing operand")
		}
		if rest[0] == "infinity" || rest[0] == "inf" {
			<-ctx.Done()
			return ctx.Err()
		}
		d, ok := seconds(rest[0])
		if !ok {
			return fail("invalid number '%s'", rest[0])
		}
		return c.p.Sleep(ctx, d)
	case "cat":
		return c.each(hc, name, operands(rest), func(r io.Reader) error { _, err := io.Copy(out, r); return err })
	case "head", "tail":
		n, files, follow := lineCount(rest)
		if follow {
			<-ctx.Done()
			return ctx.Err()
		}
		return c.each(hc, name, files, func(r io.Reader) error { return headTail(out, r, n, name == "tail") })
	case "wc":
		return c.wc(hc, rest)
	case "grep":
		return c.grep(hc, rest)
	case "awk":
		return c.awk(hc, rest)
	case "expr":
		return exitStatus(expr(out, errw, rest))
	case "sysctl":
		return exitStatus(c.sysctl(hc, rest))
	case "ip":
		if code, ok := ipChange(errw, c.p.Security, c.p.UID, rest); ok {
			return exitStatus(code)
		}
	case "nnp":
		if c.imageHas("nnp") {
			nnp(out, c.p.Security, c.p.UID)
			return nil
		}
	case "hexdump":
		return c.hexdump(hc, rest)
	case "nslookup":
		return c.nslookup(ctx, hc, rest)
	case "getent":
		return c.getent(ctx, hc, rest)
	case "wget":
		return c.wget(ctx, hc, rest)
	case "nc":
		if o, _ := parseNc(rest); !o.listen {
			return c.nc(ctx, hc, rest)
		} // nc -l serves, as an unknown command does (below)
	case "dig":
		if c.imageHas("dig") {
			return c.dig(ctx, hc, rest)
		}
	case "curl":
		if c.imageHas("curl") {
			return c.curl(ctx, hc, rest)
		}
	case "ls":
		return c.ls(hc, rest)
	case "mount":
		return c.mount(hc, rest)
	case "env", "printenv":
		vars := environ(hc.Env)
		if name == "env" {
			// env [-i] [NAME=VALUE...] [COMMAND [ARG...]]
			for len(rest) > 0 && (rest[0] == "-i" || rest[0] == "-") {
				vars, rest = nil, rest[1:]
			}
			for len(rest) > 0 && strings.Contains(rest[0], "=") && !strings.HasPrefix(rest[0], "=") {
				vars, rest = append(vars, rest[0]), rest[1:]
			}
			if len(rest) > 0 {
				return c.nested(ctx, hc, rest, vars)
			}
		}
		if len(rest) > 0 && name == "printenv" {
			v := hc.Env.Get(rest[0])
			if !v.IsSet() || !v.Exported {
				return interp.ExitStatus(1)
			}
			fmt.Fprintln(out, v.String())
			return nil
		}
		fmt.Fprintln(out, strings.Join(vars, "\n"))
		return nil
	case "hostname":
		if h := hc.Env.Get("HOSTNAME"); h.IsSet() {
			fmt.Fprintln(out, h.String())
		}
		return nil
	case "id":
		fl := strings.Join(flags(rest), "")
		switch {
		case strings.Contains(fl, "u"):
			fmt.Fprintln(out, c.p.UID)
		case strings.Contains(fl, "g"):
			fmt.Fprintln(out, c.p.GID)
		default:
			fmt.Fprintf(out, "uid=%s gid=%s groups=%s\n", account(c.p.UID), account(c.p.GID), account(c.p.GID))
		}
		return nil
	case "whoami":
		if c.p.UID != 0 {
			return fail("unknown uid %d", c.p.UID)
		}
		fmt.Fprintln(out, "root")
		return nil
	case "seq":
		first, last := 1, 0
		var err error
		switch len(rest) {
		case 1:
			last, err = strconv.Atoi(rest[0])
		case 2:
			if first, err = strconv.Atoi(rest[0]); err == nil {
				last, err = strconv.Atoi(rest[1])
			}
		default:
			return fail("usage: seq [FIRST] LAST")
		}
		if err != nil {
			return fail("invalid number")
		}
		for i := first; i <= last; i++ {
			fmt.Fprintln(out, i)
		}
		return nil
	case "uname":
		fmt.Fprintln(out, "Linux")
		return nil
	case "date":
		fmt.Fprintln(out, time.Now().UTC().Format("Mon Jan  2 15:04:05 UTC 2006"))
		return nil
	case "touch":
		for _, f := range operands(rest) {
			w, err := c.p.FS.Open(abs(hc.Dir, f), os.O_WRONLY|os.O_CREATE, 0o644)
			if err != nil {
				return fail("%s: %s", f, Reason(err))
			}
			w.Close()
		}
		return nil
	case "mkdir":
		for _, d := range operands(rest) {
			if err := c.p.FS.Mkdir(abs(hc.Dir, d)); err != nil {
				return fail("can't create directory '%s': %s", d, Reason(err))
			}
		}
		return nil
	case "rm":
		fl := strings.Join(flags(rest), "")
		force, recursive := strings.Contains(fl, "f"), strings.ContainsAny(fl, "rR")
		for _, f := range operands(rest) {
			if err := c.p.FS.Remove(abs(hc.Dir, f), recursive); err != nil && !(force && errors.Is(err, fs.ErrNotExist)) {
				return fail("can't remove '%s': %s", f, Reason(err))
			}
		}
		return nil
	case "cp", "mv":
		ops := operands(rest)
		if len(ops) != 2 {
			return fail("missing file operand")
		}
		if info, err := c.p.FS.Stat(abs(hc.Dir, ops[1])); err == nil && info.IsDir() {
			ops[1] = path.Join(ops[1], path.Base(ops[0])) // into the directory
		}
		b, err := c.p.FS.ReadFile(abs(hc.Dir, ops[0]))
		if err != nil {
			return fail("can't stat '%s': %s", ops[0], Reason(err))
		}
		w, err := c.p.FS.Open(abs(hc.Dir, ops[1]), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return fail("can't create '%s': %s", ops[1], Reason(err))
		}
		defer w.Close()
		if _, err := w.Write(b); err != nil {
			return fail("error writing '%s': %s", ops[1], Reason(err))
		}
		if name == "mv" {
			_ = c.p.FS.Remove(abs(hc.Dir, ops[0]), false)
		}
		return nil
	}
	if prog := c.p.Programs[name]; prog != nil && c.imageHas(name) {
		return c.program(ctx, hc, prog, args)
	}
	return c.unknown(ctx) // a server: it runs until stopped
}

// unknown is what a command the simulation does not know does (see
// Process.Unknown).
func (c *commands) unknown(ctx context.Context) error {
	_, err := c.p.Unknown(ctx)
	return err
}

// process is args as a process of its own, run from the shell with env,
// the caller's streams and directory.
func (c *commands) process(hc interp.HandlerContext, args, env []string) Process {
	p := c.p
	p.Argv, p.Env, p.Stdin, p.Stdout, p.Stderr, p.Dir = args, env, hc.Stdin, hc.Stdout, hc.Stderr, hc.Dir
	return p
}

// nested runs args as a process of its own (a shell a script starts, the
// command env runs) with env, the caller's streams and directory.
func (c *commands) nested(ctx context.Context, hc interp.HandlerContext, args, env []string) error {
	code, err := Run(ctx, c.process(hc, args, env))
	if err != nil {
		return err
	}
	return exitStatus(code)
}

// each runs do on each file's contents, or on stdin when there is none
// ("-" too), and reports a file it cannot open as busybox does.
func (c *commands) each(hc interp.HandlerContext, name string, files []string, do func(io.Reader) error) error {
	if len(files) == 0 {
		files = []string{"-"}
	}
	code := 0
	for _, f := range files {
		if f == "-" {
			if hc.Stdin != nil {
				_ = do(hc.Stdin)
			}
			continue
		}
		r, err := c.p.FS.Open(abs(hc.Dir, f), os.O_RDONLY, 0)
		if err != nil {
			fmt.Fprintf(hc.Stderr, "%s: can't open '%s': %s\n", name, f, Reason(err))
			code = 1
			continue
		}
		err = do(r)
		r.Close()
		if err != nil {
			fmt.Fprintf(hc.Stderr, "%s: read error: %s\n", name, Reason(err))
			code = 1
		}
	}
	return exitStatus(code)
}

func (c *commands) grep(hc interp.HandlerContext, args []string) error {
	var quiet, invert, count bool
	var pattern string
	var files []string
	fl := ""
	for i, a := range args {
		if strings.HasPrefix(a, "-") && len(a) > 1 && pattern == "" && a != "--" {
			fl += a[1:]
			continue
		}
		if pattern == "" {
			pattern, files = a, args[i+1:]
			break
		}
	}
	quiet, invert, count = strings.Contains(fl, "q"), strings.Contains(fl, "v"), strings.Contains(fl, "c")
	if strings.Contains(fl, "i") {
		pattern = "(?i)" + pattern
	}
	if strings.Contains(fl, "F") {
		pattern = regexp.QuoteMeta(pattern)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		fmt.Fprintf(hc.Stderr, "grep: bad regex '%s'\n", pattern)
		return interp.ExitStatus(2)
	}
	matched := 0
	err = c.each(hc, "grep", files, func(r io.Reader) error {
		s := bufio.NewScanner(r)
		for s.Scan() {
			if re.MatchString(s.Text()) != invert {
				matched++
				if !quiet && !count {
					fmt.Fprintln(hc.Stdout, s.Text())
				}
			}
		}
		return s.Err()
	})
	if count {
		fmt.Fprintln(hc.Stdout, matched)
	}
	if code, _ := interp.IsExitStatus(err); code != 0 {
		return interp.ExitStatus(2)
	}
	if matched == 0 {
		return interp.ExitStatus(1)
	}
	return nil
}

// headTail writes the first (or last) n lines of r.
func headTail(w io.Writer, r io.Reader, n int, tail bool) error {
	s := bufio.NewScanner(r)
	var lines []string
	for s.Scan() {
		lines = append(lines, s.Text())
		if !tail && len(lines) == n {
			break
		}
	}
	if tail && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	return s.Err()
}

// lineCount reads head's and tail's -n N (or -N), and tail's -f.
func lineCount(args []string) (n int, files []string, follow bool) {
	n = 10
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-f" || a == "-F":
			follow = true
		case a == "-n" && i+1 < len(args):
			n, _ = strconv.Atoi(strings.TrimPrefix(args[i+1], "+"))
			i++
		case strings.HasPrefix(a, "-n"):
			n, _ = strconv.Atoi(a[2:])
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if v, err := strconv.Atoi(a[1:]); err == nil {
				n = v
			}
		default:
			files = append(files, a)
		}
	}
	return n, files, follow
}

// flags and operands split a command's arguments at their dashes.
func flags(args []string) []string {
	var out []string
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			out = append(out, a[1:])
		}
	}
	return out
}

func operands(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			out = append(out, a)
		}
	}
	return out
}

// seconds reads sleep's argument: 5, 0.5, 5s, 2m, 1h, 1d.
func seconds(s string) (time.Duration, bool) {
	unit := time.Second
	switch {
	case strings.HasSuffix(s, "s"):
		s = s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		s, unit = s[:len(s)-1], time.Minute
	case strings.HasSuffix(s, "h"):
		s, unit = s[:len(s)-1], time.Hour
	case strings.HasSuffix(s, "d"):
		s, unit = s[:len(s)-1], 24*time.Hour
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	return time.Duration(f * float64(unit)), true
}

// Reason is an error's words as busybox prints them: "No such file or
// directory" for a file that does not exist, "Permission denied", else
// the error's text with a capital.
func Reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "No such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "Permission denied"
	}
	s := err.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// exitStatus is the handler's result for code: nil for success, as the
// interpreter wants it.
func exitStatus(code int) error {
	if code == 0 {
		return nil
	}
	return interp.ExitStatus(uint8(code))
}

// account is a user or group ID as id prints it: 0(root), else the number
// (a simulated image has no /etc/passwd to name it).
func account(id int64) string {
	if id == 0 {
		return "0(root)"
	}
	return strconv.FormatInt(id, 10)
}
