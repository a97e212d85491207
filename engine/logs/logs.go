// Package logs keeps component and library logs (klog from every upstream
// component and client-go, the API server's etcd client, the standard
// library's logger) off the terminal:
// they go to a file, or nowhere.
package logs

import (
	"flag"
	"io"
	"log"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"
)

// ToFile sends klog's output to path (appending) and returns a function that
// closes it.
func ToFile(path string) (func() error, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	To(f)
	return f.Close, nil
}

// To sends klog's output to w; io.Discard silences it. The standard
// library's logger goes there too: CoreDNS and caddy log through it.
func To(w io.Writer) {
	log.SetOutput(w)
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	// Each line once: klog otherwise writes an error to its error, warning
	// and info outputs, which SetOutput makes the same file.
	_ = fs.Set("one_output", "true")
	klog.SetOutput(w)
	klog.LogToStderr(false)
	current.Lock()
	current.w = w
	current.Unlock()
}

// StderrToFile points the process's os.Stderr at path (appending) until
// restore is called. Some upstream code writes to os.Stderr itself rather
// than through klog: kube-apiserver's secure server logs its HTTP errors
// there ("http2: server: error reading preface from client ...: connection
// reset by peer"), taking os.Stderr when it starts serving. Call it before
// the components start; the process's standard error (file descriptor 2,
// where a crash is written) is left as it is, so a caller that kept the
// original os.Stderr still writes to the terminal.
func StderrToFile(path string) (restore func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	prev := os.Stderr
	os.Stderr = f
	return func() { os.Stderr = prev; f.Close() }, nil
}
