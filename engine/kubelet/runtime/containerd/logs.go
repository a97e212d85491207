package containerd

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

// maxLogLines bounds the lines kept in memory per container.
const maxLogLines = 10000

// logBook keeps a container's output as lines, in memory for pods/log and
// in a file in the CRI log format ("TIME STREAM F TEXT").
type logBook struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	lines []runtime.LogLine
	file  *os.File
}

func newLogBook(path string, clk clock.PassiveClock) (*logBook, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open container log: %w", err)
	}
	return &logBook{clock: clk, file: f}, nil
}

func (b *logBook) add(stream, text string) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, runtime.LogLine{Time: now, Stream: stream, Text: text})
	if len(b.lines) > maxLogLines {
		b.lines = append([]runtime.LogLine(nil), b.lines[len(b.lines)-maxLogLines:]...)
	}
	if b.file != nil {
		fmt.Fprintf(b.file, "%s %s F %s\n", now.UTC().Format(time.RFC3339Nano), stream, text)
	}
}

// snapshot returns a copy of the lines so far.
func (b *logBook) snapshot() []runtime.LogLine {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]runtime.LogLine(nil), b.lines...)
}

func (b *logBook) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.file != nil {
		b.file.Close()
		b.file = nil
	}
}

// lineWriter splits one stream into lines for a logBook.
type lineWriter struct {
	book   *logBook
	stream string
	mu     sync.Mutex
	buf    []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.book.add(w.stream, string(bytes.TrimSuffix(w.buf[:i], []byte("\r"))))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 16<<10 { // a very long line is cut, as CRI does ("P" lines)
		w.book.add(w.stream, string(w.buf))
		w.buf = nil
	}
	return len(p), nil
}

// flush writes an unterminated last line.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.book.add(w.stream, string(w.buf))
		w.buf = nil
	}
}

// syncBuffer is a bytes.Buffer safe for the copy goroutines of an exec.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
