package logs

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// Every component's line reaches the file once, errors and warnings too.
func TestEachLineOnce(t *testing.T) {
	var buf bytes.Buffer
	To(&buf)
	t.Cleanup(func() { To(io.Discard) })
	klog.Info("an info line")
	klog.Warning("a warning line")
	klog.Error("an error line")
	log.Print("[ERROR] plugin/errors: a line of CoreDNS's") // the standard library's logger
	klog.Flush()
	for _, line := range []string{"an info line", "a warning line", "an error line", "a line of CoreDNS's"} {
		if n := strings.Count(buf.String(), line); n != 1 {
			t.Errorf("%q written %d times, want once:\n%s", line, n, buf.String())
		}
	}
}

// What upstream code writes to os.Stderr itself (kube-apiserver's HTTP
// server errors) goes to the log file until restored, and the standard
// error the process started with is untouched.
func TestStderrToFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "podtrace.log")
	before := os.Stderr
	restore, err := StderrToFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(os.Stderr, "http2: server: error reading preface from client")
	restore()
	if os.Stderr != before {
		t.Fatal("os.Stderr not restored")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "http2: server: error reading preface from client\n" {
		t.Errorf("log file holds %q", data)
	}
}
