package upstream

import (
	"flag"
	"fmt"
	"os"
	"sync"

	"k8s.io/klog/v2"
)

var logMu sync.Mutex

// LogTo sends klog, the log of every upstream component and library, to
// the file at path (appending), never to the terminal a UI draws on. The
// previous log file, if any, is closed by the caller through the returned
// file's Close once nothing writes to it.
func LogTo(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open component log: %w", err)
	}
	logMu.Lock()
	defer logMu.Unlock()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false",
		"stderrthreshold": "FATAL", "one_output": "true"} {
		if err := fs.Set(name, value); err != nil {
			f.Close()
			return nil, fmt.Errorf("configure klog: %w", err)
		}
	}
	klog.SetOutput(f)
	return f, nil
}
