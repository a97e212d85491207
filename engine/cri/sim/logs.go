package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// logFile is a container's log in the CRI format the kubelet reads
// (pkg/kubelet/kuberuntime/logs): "<RFC3339Nano time> <stream> F <line>",
// P instead of F for output that ends without a newline, as containerd
// writes it.
type logFile struct {
	mu sync.Mutex
	f  *os.File
}

func openLog(path string) *logFile {
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		klog.ErrorS(err, "Cannot create container log directory", "path", path)
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		klog.ErrorS(err, "Cannot open container log", "path", path)
		return nil
	}
	return &logFile{f: f}
}

func (l *logFile) write(t time.Time, stream, text string, partial bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		tag := "F"
		if partial {
			tag = "P"
		}
		fmt.Fprintf(l.f, "%s %s %s %s\n", t.UTC().Format(time.RFC3339Nano), stream, tag, text)
	}
}

func (l *logFile) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
