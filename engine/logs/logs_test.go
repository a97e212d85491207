package logs

import (
	"bytes"
	"io"
	"log"
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
