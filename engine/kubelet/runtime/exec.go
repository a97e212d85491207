package runtime

import (
	"context"
	"io"
)

// TerminalSize is a resize event of an exec's terminal.
type TerminalSize struct {
	Width, Height uint16
}

// ExecStreams are an interactive exec's process IO; a nil stream was not
// requested.
type ExecStreams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	TTY            bool
	Resize         <-chan TerminalSize
}

// Execer is the optional part of a Runtime that runs interactive commands
// (CRI Exec and its streaming server), for `kubectl exec`. A runtime that
// cannot run processes does not implement it.
type Execer interface {
	// Exec runs cmd in the running container id with the given IO until it
	// exits, and returns its exit code.
	Exec(ctx context.Context, id string, cmd []string, s ExecStreams) (int, error)
}
