// Command podtrace shows, stage by stage, what happens between
// `kubectl apply` and a running container, on an embedded cluster.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// exitError carries an exit code out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

// terminal is the standard error podtrace started with: its own messages
// go there, while os.Stderr is pointed at the cluster's log once that is
// open (logs.StderrToFile), for upstream code that writes to it directly.
var terminal io.Writer = os.Stderr

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, terminal)
	stop()
	os.Exit(code)
}

// execute runs the command line args and returns the exit code; help,
// version and completion go to stdout, an error is one line on stderr.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code, err = ee.code, ee.err
	}
	if err != nil {
		fmt.Fprintln(stderr, "podtrace: "+oneLine(err))
	}
	return code
}

// newRootCmd builds the command tree. The root command itself opens the UI
// on the embedded cluster, as `podtrace run` does.
func newRootCmd() *cobra.Command {
	root := newRunCmd("podtrace")
	root.Short = "podtrace shows every stage between kubectl apply and a running container"
	root.Long = `podtrace shows, live and stage by stage, what happens between kubectl apply
and a running container, on a whole cluster it runs in one process; any
stage can be broken on purpose. Without a command it starts the embedded
cluster and opens the UI (flags as for 'podtrace run').`
	root.Example = `  podtrace                                        # the embedded cluster (3 nodes) and the UI
  podtrace run -f examples/web.yaml --headless    # stage events as JSON lines
  podtrace attach deploy/web --context prod -n shop`
	root.Args = cobra.NoArgs
	root.SilenceErrors, root.SilenceUsage = true, true
	setVersion(root)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())
	})
	root.AddCommand(newRunCmd("run"), newServeCmd(), newKubeconfigCmd(), newScenarioCmd(),
		newAttachCmd(), newReplayCmd(), newAgentCmd(), newVersionCmd())
	return root
}

// noArgs refuses positional arguments with one line naming the first.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q", args[0])
	}
	return nil
}
