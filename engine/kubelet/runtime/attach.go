package runtime

import "context"

// Attacher is the optional part of a Runtime that attaches to a running
// container's main process (CRI Attach and its streaming server), for
// `kubectl attach` and `kubectl run -it`. A runtime that runs no processes
// does not implement it.
type Attacher interface {
	// Attach copies s.Stdin to the stdin of container id (when it was
	// created with one) and the container's new output to s.Stdout and
	// s.Stderr until the client's input or output ends, the container exits
	// or ctx is done. s.TTY is the container's own setting; resizes apply
	// to its terminal.
	Attach(ctx context.Context, id string, s ExecStreams) error
}
