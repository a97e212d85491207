package containerd

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

// failingWriter fails every write, as a client whose stream is gone.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("stream closed") }

// TestFanOut checks that output goes to the log and every attached client,
// that a client whose write fails or that is removed is dropped (its gone
// channel closes), and that the end of the stream drops the rest and
// answers later attaches at once.
func TestFanOut(t *testing.T) {
	book, err := newLogBook(filepath.Join(t.TempDir(), "log"), clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer book.close()
	f := &fanOut{log: &lineWriter{book: book, stream: "stdout"}}
	var a, b strings.Builder
	aGone, _ := f.add(&a)
	bGone, removeB := f.add(&b)
	badGone, _ := f.add(failingWriter{})
	_, _ = f.Write([]byte("one\n"))
	removeB()
	_, _ = f.Write([]byte("two\nunterminated"))
	for _, tc := range []struct {
		name, got, want string
		gone            <-chan struct{}
		wantGone        bool
	}{
		{"attached", a.String(), "one\ntwo\nunterminated", aGone, false},
		{"removed", b.String(), "one\n", bGone, true},
		{"failing", "", "", badGone, true},
	} {
		if tc.got != tc.want || isClosed(tc.gone) != tc.wantGone {
			t.Errorf("%s: got %q, gone %v; want %q, gone %v", tc.name, tc.got, isClosed(tc.gone), tc.want, tc.wantGone)
		}
	}
	f.end()
	if !isClosed(aGone) {
		t.Error("end left a client attached")
	}
	if late, _ := f.add(&a); !isClosed(late) {
		t.Error("an attach after the end waits")
	}
	var lines []string
	for _, l := range book.snapshot() {
		lines = append(lines, l.Text)
	}
	if got := strings.Join(lines, "|"); got != "one|two|unterminated" {
		t.Errorf("log %q, want one|two|unterminated", got)
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestAttachReturnsWithNothingToCopy checks, as containerd's
// ContainerIO.Attach behaves, that an attach whose streams are all done
// returns instead of waiting for the container: stdin only to a container
// without stdin, and stdin only to a stdinOnce container once the input ends.
func TestAttachReturnsWithNothingToCopy(t *testing.T) {
	book, err := newLogBook(filepath.Join(t.TempDir(), "log"), clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer book.close()
	for _, tc := range []struct {
		name string
		cfg  runtime.ContainerConfig
	}{
		{"container without stdin", runtime.ContainerConfig{}},
		{"stdinOnce container, input ended", runtime.ContainerConfig{Stdin: true, StdinOnce: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newContainerIO(tc.cfg, book)
			if x.stdinR != nil {
				go func() { _, _ = io.Copy(io.Discard, x.stdinR) }() // the process reading its stdin
			}
			done := make(chan struct{})
			go func() {
				x.attach(context.Background(), runtime.ExecStreams{Stdin: strings.NewReader("input\n")}, func() {})
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("attach still waiting with nothing to copy")
			}
		})
	}
}
