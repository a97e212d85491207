package logs

import (
	"io"
	"net/url"
	"sync"

	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.uber.org/zap"
)

// current is where To sends logs; zap loggers built from etcd's default
// configuration write there too.
var current = struct {
	sync.Mutex
	w io.Writer
}{w: io.Discard}

func output() io.Writer {
	current.Lock()
	defer current.Unlock()
	return current.w
}

// sink is a zap.Sink writing to wherever To last pointed the logs.
type sink struct{}

func (sink) Write(p []byte) (int, error) { return output().Write(p) }
func (sink) Sync() error                 { return nil }
func (sink) Close() error                { return nil }

// kube-apiserver's etcd client builds its zap logger in an init function
// from etcd's DefaultZapLoggerConfig, which writes to stderr: the terminal a
// UI draws on. This package sorts before k8s.io/apiserver and needs only
// zap and logutil, so Go initializes it first; pointing the default
// configuration at a sink of ours sends those logs where klog's go.
func init() {
	if err := zap.RegisterSink("podtrace", func(*url.URL) (zap.Sink, error) { return sink{}, nil }); err != nil {
		return
	}
	logutil.DefaultZapLoggerConfig.OutputPaths = []string{"podtrace:"}
	logutil.DefaultZapLoggerConfig.ErrorOutputPaths = []string{"podtrace:"}
}
