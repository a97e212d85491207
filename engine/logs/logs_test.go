package logs

import (
	"bytes"
	"io"
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
	klog.Flush()
	for _, line := range []string{"an info line", "a warning line", "an error line"} {
		if n := strings.Count(buf.String(), line); n != 1 {
			t.Errorf("%q written %d times, want once:\n%s", line, n, buf.String())
		}
	}
}
