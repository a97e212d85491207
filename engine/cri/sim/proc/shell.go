package proc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// runScript parses and runs script with the shell options set (-e, -x)
// and the positional parameters params.
func runScript(ctx context.Context, p Process, script string, set, params []string) (int, error) {
	file, err := syntax.NewParser().Parse(strings.NewReader(script), "")
	if err == nil {
		err = simulated(file)
	}
	if err != nil {
		fmt.Fprintf(p.Stderr, "sh: syntax error: %v\n", err)
		return 2, nil
	}
	r, err := newRunner(ctx, p, set, params)
	if err != nil {
		return 0, err
	}
	return status(ctx, r.Run(ctx, file))
}

// runInteractive runs the statements a shell reads from stdin, one by one
// as they arrive, as `kubectl exec -i POD -- sh` feeds them. On a terminal
// it prompts as busybox's sh does for root, and a syntax error costs the
// line, not the shell.
func runInteractive(ctx context.Context, p Process, set []string) (int, error) {
	r, err := newRunner(ctx, p, set, nil)
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
			if err == nil {
				for _, st := range stmts {
					if err = simulated(st); err != nil {
						break
					}
				}
			}
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

// simulated refuses what the simulation cannot run inside the container:
// process substitution, whose pipe the interpreter makes on the host.
func simulated(node syntax.Node) error {
	var err error
	syntax.Walk(node, func(n syntax.Node) bool {
		if ps, ok := n.(*syntax.ProcSubst); ok && err == nil {
			err = fmt.Errorf("%s: process substitution is not simulated", ps.Pos())
		}
		return err == nil
	})
	return err
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

// newRunner returns an interpreter for p whose every command, file,
// directory and stat goes to the simulation, never to the host.
func newRunner(ctx context.Context, p Process, set, params []string) (*interp.Runner, error) {
	// The interpreter opens files named <TMPDIR>/sh-interp-* on the host
	// itself, for its own pipes; TMPDIR, as it starts, is a directory
	// that does not exist, so that nothing can be opened there. The
	// container's own TMPDIR is set again before anything runs.
	hidden := make([]byte, 16)
	_, _ = rand.Read(hidden)
	env := append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}, p.Env...)
	env = append(env, "TMPDIR=/nonexistent-"+hex.EncodeToString(hidden))
	c := &commands{p: p}
	opts := []interp.RunnerOption{
		interp.Env(expand.ListEnviron(env...)),
		interp.StdIO(p.Stdin, p.Stdout, p.Stderr),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return c.run }),
		interp.OpenHandler(func(ctx context.Context, name string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
			hc := interp.HandlerCtx(ctx)
			switch name {
			case "/dev/stdout":
				return writeOnly{hc.Stdout}, nil
			case "/dev/stderr":
				return writeOnly{hc.Stderr}, nil
			}
			f, err := p.FS.Open(abs(hc.Dir, name), flag, perm)
			if err != nil {
				// A redirection that fails, in busybox's words (the
				// interpreter prints the error as it is).
				op, shown := "can't open", "'"+name+"'"
				if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
					op, shown = "can't create", name
				}
				return nil, &fs.PathError{Op: p.Argv[0] + ": " + op, Path: shown, Err: errors.New(Reason(err))}
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
		interp.Params(append(append(set, "--"), params...)...),
	}
	r, err := interp.New(opts...)
	if err != nil {
		return nil, err
	}
	r.Dir = p.Dir
	restore := "unset TMPDIR"
	for _, kv := range p.Env {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			q, err := syntax.Quote(v, syntax.LangBash)
			if err != nil {
				break
			}
			restore = "export TMPDIR=" + q
		}
	}
	file, err := syntax.NewParser().Parse(strings.NewReader(restore), "")
	if err != nil {
		return nil, err
	}
	if err := r.Run(ctx, file); err != nil {
		return nil, err
	}
	return r, nil
}

// writeOnly is one of the process's output streams as a file it opened
// (/dev/stdout, /dev/stderr).
type writeOnly struct{ io.Writer }

func (writeOnly) Read([]byte) (int, error) { return 0, io.EOF }
func (writeOnly) Close() error             { return nil }

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
