// Command pause is podtrace's pod sandbox process: it holds the pod's
// namespaces, reaps orphaned children (it is PID 1) and exits 0 on SIGINT
// or SIGTERM, as Kubernetes' pause container does. podtrace compiles it
// statically into the podtrace.dev/pause image.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
