// Command podtrace shows, stage by stage, what happens between
// `kubectl apply` and a running container, on an embedded cluster.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// exitError carries an exit code out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

const usage = `podtrace shows every stage between kubectl apply and a running container.

Usage:
  podtrace [-f FILE] [flags]        start the embedded cluster and open the UI
  podtrace run -f FILE --headless   apply FILE and print stage events as JSON lines
  podtrace serve [flags]            run the embedded cluster until interrupted
  podtrace scenario list|NAME       workshop scenarios: a story, a broken cluster, a goal
  podtrace kubeconfig --data-dir D  print the kubeconfig path of a data dir
  podtrace attach [pod/N|deploy/N]  the UI on a real cluster (--kubeconfig, --context, -n, -A, --record)
  podtrace replay FILE              the UI on a recorded JSON-lines stream (pause, speed, skip ahead)
  podtrace agent --nodes N          podtrace nodes for any API server (--kubeconfig, --context)

Run 'podtrace COMMAND -h' for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := dispatch(ctx, os.Args[1:])
	stop()
	if err == nil {
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "podtrace: "+err.Error())
	}
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "run":
			return runCmd(ctx, args[1:])
		case "serve":
			return serveCmd(ctx, args[1:])
		case "scenario":
			return scenarioCmd(ctx, args[1:])
		case "kubeconfig":
			return kubeconfigCmd(args[1:])
		case "attach":
			return attachCmd(ctx, args[1:])
		case "replay":
			return replayCmd(ctx, args[1:])
		case "agent":
			return agentCmd(ctx, args[1:])
		case "help", "-h", "--help":
			fmt.Print(usage)
			return nil
		}
		if len(args[0]) > 0 && args[0][0] != '-' {
			return fmt.Errorf("unknown command %q (run 'podtrace help')", args[0])
		}
	}
	return runCmd(ctx, args)
}
