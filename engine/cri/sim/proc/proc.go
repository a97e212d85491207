// Package proc runs a simulated container's processes: its command, and
// the commands of exec probes, exec hooks and kubectl exec. Shell scripts
// are interpreted by mvdan.cc/sh (the POSIX shell busybox's sh also
// speaks); the commands they call are simulated here (cat, ls, env, sleep,
// grep, ...) against the container's files (FS: the volumes and files the
// kubelet mounted, where it put them, over an in-memory layer) and its
// environment as the kubelet computed it. Programs beyond busybox's
// (agnhost's, engine/cri/sim/agnhost) come in the process's Programs,
// from the runtime. A command the simulation does not know is taken for
// a server: as a container's process it runs until stopped, under exec
// it succeeds at once. Nothing runs on the host.
package proc

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

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
	// Security is the container's privileged flag, no_new_privs and
	// capabilities.
	Security Security
	// Dir is the working directory ("/" when empty).
	Dir string
	// Image is the container's image (a normalized reference): the
	// commands that busybox lacks (dig, curl, Programs) exist only in the
	// images that have them (see imageHas).
	Image string
	// Hostname is the pod's host name (agnhost's servers answer it);
	// HOSTNAME's value when empty.
	Hostname string
	// Net is where the container's servers listen (its pod's address);
	// nil for none.
	Net Network
	// Programs are the programs its image may have beyond busybox's
	// applets (agnhost's); a command among them runs only when the image
	// has it.
	Programs Programs
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
func Run(ctx context.Context, p Process) (code int, err error) {
	defer func() {
		if v := recover(); v != nil { // the interpreter's, on a case no handler covers
			fmt.Fprintf(p.Stderr, "sh: %v\n", v)
			code, err = 2, nil
		}
	}()
	if p.Stdout == nil {
		p.Stdout = io.Discard
	}
	if p.Stderr == nil {
		p.Stderr = io.Discard
	}
	if p.Dir == "" {
		p.Dir = "/"
	}
	if len(p.Argv) == 0 {
		return 0, nil
	}
	if p.Stdin != nil {
		// One reader of the input, shared by the shell and the commands it
		// runs, as a process's stdin is.
		in, done, err := asFile(p.Stdin)
		if err != nil {
			return 0, err
		}
		defer done()
		p.Stdin = in
	}
	if !IsShell(p.Argv[0]) {
		words := make([]string, len(p.Argv))
		for i, a := range p.Argv {
			q, err := syntax.Quote(a, syntax.LangBash)
			if err != nil {
				fmt.Fprintf(p.Stderr, "sh: %s: not found\n", p.Argv[0])
				return 127, nil
			}
			words[i] = q
		}
		return runScript(ctx, p, strings.Join(words, " "), nil, nil)
	}
	opts, rest := shellFlags(p.Argv[1:])
	command := strings.Contains(strings.Join(opts, ""), "c")
	var set []string // the shell's options: -e, -u, -x
	for _, o := range opts {
		for _, f := range o {
			if strings.ContainsRune("eux", f) {
				set = append(set, "-"+string(f))
			}
		}
	}
	switch {
	case command && len(rest) > 0:
		// sh -c SCRIPT [NAME [ARG...]]: NAME is $0.
		return runScript(ctx, p, rest[0], set, rest[min(2, len(rest)):])
	case len(rest) > 0:
		// sh FILE [ARG...]: the script is a file of the container's.
		b, err := p.FS.ReadFile(abs(p.Dir, rest[0]))
		if err != nil {
			fmt.Fprintf(p.Stderr, "%s: can't open '%s': %s\n", path.Base(p.Argv[0]), rest[0], Reason(err))
			return 127, nil
		}
		return runScript(ctx, p, string(b), set, rest[1:])
	case p.Stdin == nil:
		return 0, nil // a shell without input (no TTY, no stdin) exits at once
	}
	return runInteractive(ctx, p, set)
}

// shellFlags splits a shell's arguments into its flags (-c, -ec, -x) and
// the rest.
func shellFlags(args []string) (flags, rest []string) {
	for i, a := range args {
		if a == "--" {
			return flags, args[i+1:]
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return flags, args[i:]
		}
		flags = append(flags, a[1:])
	}
	return flags, nil
}

// asFile gives in as a file (a pipe fed from it, unless it is one), and
// what to call when done with it.
func asFile(in io.Reader) (*os.File, func(), error) {
	if f, ok := in.(*os.File); ok {
		return f, func() {}, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	go func() {
		_, _ = io.Copy(w, in)
		w.Close()
	}()
	return r, func() { r.Close() }, nil
}
