// Package proc runs a simulated container's processes: its command, and
// the commands of exec probes, exec hooks and kubectl exec. Shell scripts
// are interpreted by mvdan.cc/sh (the POSIX shell busybox's sh also
// speaks); the commands they call are simulated here (cat, ls, env, sleep,
// grep, ...) against the container's files (FS: the volumes and files the
// kubelet mounted, where it put them, over an in-memory layer) and its
// environment as the kubelet computed it. A command the simulation does
// not know is taken for a server: as a container's process it runs until
// stopped, under exec it succeeds at once. Nothing runs on the host.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Process is one process to run in a container.
type Process struct {
	// Argv is the command and its arguments.
	Argv []string
	// Env is the environment, KEY=value.
	Env []string
	// FS is the container's file system.
	FS *FS
	// Stdin is nil for none; Stdout and Stderr take the output.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Sleep waits for d, or until ctx ends (the runtime's clock).
	Sleep func(ctx context.Context, d time.Duration) error
	// Exec marks a command run by exec: an unknown command succeeds at
	// once rather than serve until stopped.
	Exec bool
	// Terminal marks stdin and stdout as a terminal (kubectl exec -t): a
	// shell reading its input prompts.
	Terminal bool
	// UID and GID are the user and group the process runs as (the
	// container's runAsUser and runAsGroup; 0, root, when unset).
	UID, GID int64
}

// IsShell reports whether argv0 names a shell.
func IsShell(argv0 string) bool {
	switch path.Base(argv0) {
	case "sh", "bash", "ash", "dash", "zsh":
		return true
	}
	return false
}

// Run runs p until it exits, and returns its exit status; it returns
// ctx's error instead when ctx ends first (the container was stopped).
func Run(ctx context.Context, p Process) (int, error) {
	if p.Stdout == nil {
		p.Stdout = io.Discard
	}
	if p.Stderr == nil {
		p.Stderr = io.Discard
	}
	if len(p.Argv) == 0 {
		return 0, nil
	}
	var script string
	var params []string
	switch {
	case IsShell(p.Argv[0]) && len(p.Argv) >= 3 && p.Argv[1] == "-c":
		script, params = p.Argv[2], p.Argv[3:]
	case IsShell(p.Argv[0]) && len(p.Argv) > 1 && !strings.HasPrefix(p.Argv[1], "-"):
		// sh FILE: the script is a file of the container's.
		b, err := readFile(p.FS, p.Argv[1])
		if err != nil {
			fmt.Fprintf(p.Stderr, "%s: can't open '%s': No such file or directory\n", path.Base(p.Argv[0]), p.Argv[1])
			return 127, nil
		}
		script, params = string(b), p.Argv[2:]
	case IsShell(p.Argv[0]):
		if p.Stdin == nil {
			return 0, nil // a shell without input (no TTY, no stdin) exits at once
		}
		return runInteractive(ctx, p)
	default:
		words := make([]string, len(p.Argv))
		for i, a := range p.Argv {
			q, err := syntax.Quote(a, syntax.LangBash)
			if err != nil {
				return 127, nil
			}
			words[i] = q
		}
		script = strings.Join(words, " ")
	}
	file, err := syntax.NewParser().Parse(strings.NewReader(script), "")
	if err != nil {
		fmt.Fprintf(p.Stderr, "sh: syntax error: %v\n", err)
		return 2, nil
	}
	r, err := newRunner(p, params)
	if err != nil {
		return 0, err
	}
	return status(ctx, r.Run(ctx, file))
}

// runInteractive runs the statements a shell reads from stdin, one by one
// as they arrive, as `kubectl exec -i POD -- sh` feeds them. On a terminal
// it prompts as busybox's sh does for root, and a syntax error costs the
// line, not the shell.
func runInteractive(ctx context.Context, p Process) (int, error) {
	r, err := newRunner(p, nil)
	if err != nil {
		return 0, err
	}
	prompt := func(s string) {
		if p.Terminal {
			fmt.Fprint(p.Stdout, s)
		}
	}
	ps1 := func() { prompt(r.Dir + " # ") } // busybox's for root: the directory, then #
	code := 0
	for {
		ps1()
		parser := syntax.NewParser()
		failed := false
		for stmts, err := range parser.InteractiveSeq(p.Stdin) {
			if err != nil {
				fmt.Fprintf(p.Stderr, "sh: syntax error: %v\n", err)
				code, failed = 2, true
				break
			}
			if parser.Incomplete() {
				prompt("> ")
				continue
			}
			for _, st := range stmts {
				if code, err = status(ctx, r.Run(ctx, st)); err != nil {
					return 0, err
				}
				if r.Exited() {
					return code, nil
				}
			}
			ps1()
		}
		if !failed || !p.Terminal || ctx.Err() != nil {
			return code, ctx.Err()
		}
	}
}

// status turns the interpreter's result into an exit status.
func status(ctx context.Context, err error) (int, error) {
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if err == nil {
		return 0, nil
	}
	if code, ok := interp.IsExitStatus(err); ok {
		return int(code), nil
	}
	return 1, nil
}

func newRunner(p Process, params []string) (*interp.Runner, error) {
	env := append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}, p.Env...)
	c := &commands{p: p}
	opts := []interp.RunnerOption{
		interp.Env(expand.ListEnviron(env...)),
		interp.StdIO(p.Stdin, p.Stdout, p.Stderr),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return c.run }),
		interp.OpenHandler(func(ctx context.Context, name string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
			f, err := p.FS.Open(abs(interp.HandlerCtx(ctx).Dir, name), flag, perm)
			if err != nil {
				// A redirection that fails, in busybox's words (the
				// interpreter prints the error as it is).
				op, shown := "can't open", "'"+name+"'"
				if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
					op, shown = "can't create", name
				}
				return nil, &fs.PathError{Op: p.Argv[0] + ": " + op, Path: shown, Err: errors.New(reason(err))}
			}
			return f, nil
		}),
		interp.StatHandler(func(ctx context.Context, name string, _ bool) (fs.FileInfo, error) {
			return p.FS.Stat(abs(interp.HandlerCtx(ctx).Dir, name))
		}),
		interp.ReadDirHandler2(func(ctx context.Context, name string) ([]fs.DirEntry, error) {
			return p.FS.ReadDir(abs(interp.HandlerCtx(ctx).Dir, name))
		}),
		interp.AccessHandler(func(ctx context.Context, name string, _ interp.AccessMode) error {
			_, err := p.FS.Stat(abs(interp.HandlerCtx(ctx).Dir, name))
			return err
		}),
	}
	if len(params) > 0 {
		opts = append(opts, interp.Params(append([]string{"--"}, params[min(1, len(params)):]...)...))
	}
	r, err := interp.New(opts...)
	if err != nil {
		return nil, err
	}
	r.Dir = "/"
	return r, nil
}

// readFile reads a container's file.
func readFile(fsys *FS, name string) ([]byte, error) {
	f, err := fsys.Open(abs("/", name), 0, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// environ lists the exported variables of env, sorted, as KEY=value.
func environ(env expand.Environ) []string {
	vars := map[string]string{}
	for name, v := range env.Each {
		if v.Exported && v.IsSet() {
			vars[name] = v.String()
		} else {
			delete(vars, name)
		}
	}
	out := make([]string, 0, len(vars))
	for name, v := range vars {
		out = append(out, name+"="+v)
	}
	sort.Strings(out)
	return out
}
