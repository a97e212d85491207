package kubelet

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

// logRuntime is a runtime holding one container's lines and state.
type logRuntime struct {
	runtime.Runtime
	mu      sync.Mutex
	lines   []runtime.LogLine
	running bool
}

func (r *logRuntime) ContainerLogs(context.Context, string) ([]runtime.LogLine, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]runtime.LogLine(nil), r.lines...), nil
}

func (r *logRuntime) ContainerStatus(context.Context, string) (runtime.ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := runtime.ContainerStatus{State: runtime.StateExited}
	if r.running {
		st.State = runtime.StateRunning
	}
	return st, nil
}

func (r *logRuntime) add(l runtime.LogLine, running bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, l)
	r.running = running
}

func TestWriteLogs(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rt := &logRuntime{running: true}
	for i, s := range []string{"a", "b", "c"} {
		rt.lines = append(rt.lines, runtime.LogLine{Time: t0.Add(time.Duration(i) * time.Minute), Text: s})
	}
	now := t0.Add(3 * time.Minute)
	for _, c := range []struct {
		opts v1.PodLogOptions
		want string
	}{
		{v1.PodLogOptions{}, "a\nb\nc\n"},
		{v1.PodLogOptions{TailLines: ptr.To(int64(2))}, "b\nc\n"},
		{v1.PodLogOptions{TailLines: ptr.To(int64(0))}, ""},
		{v1.PodLogOptions{SinceSeconds: ptr.To(int64(150))}, "b\nc\n"},
		{v1.PodLogOptions{SinceTime: ptr.To(metav1.NewTime(t0.Add(2 * time.Minute)))}, "c\n"},
		{v1.PodLogOptions{LimitBytes: ptr.To(int64(3))}, "a\nb"},
		{v1.PodLogOptions{Timestamps: true, TailLines: ptr.To(int64(1))}, "2026-03-01T12:02:00Z c\n"},
	} {
		var out strings.Builder
		if err := writeLogs(context.Background(), rt, "id", &c.opts, &out, now); err != nil || out.String() != c.want {
			t.Errorf("%+v: %q %v, want %q", c.opts, out.String(), err, c.want)
		}
	}
	// Following: new lines until the container stops.
	done := make(chan string)
	go func() {
		var out strings.Builder
		_ = writeLogs(context.Background(), rt, "id", &v1.PodLogOptions{Follow: true, TailLines: ptr.To(int64(1))}, &out, now)
		done <- out.String()
	}()
	time.Sleep(2 * logPollInterval)
	rt.add(runtime.LogLine{Time: now, Text: "d"}, true)
	time.Sleep(2 * logPollInterval)
	rt.add(runtime.LogLine{Time: now, Text: "bye"}, false)
	select {
	case got := <-done:
		if got != "c\nd\nbye\n" {
			t.Fatalf("follow: %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end when the container stopped")
	}
}

func TestLogContainerIDErrors(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
		{Name: "pull", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}}}
	w := &podWorker{}
	for _, c := range []struct {
		container string
		previous  bool
		want      string
	}{
		{"c", false, `container "c" in pod "p" is waiting to start: ContainerCreating`},
		{"c", true, `previous terminated container "c" in pod "p" not found`},
		{"pull", false, `container "pull" in pod "p" is waiting to start: trying and failing to pull image`},
	} {
		if _, err := logContainerID(w, pod, c.container, c.previous); err == nil || err.Error() != c.want {
			t.Errorf("%s previous=%v: %v, want %s", c.container, c.previous, err, c.want)
		}
	}
	w.setLogIDs("c", "cur", "prev")
	if id, err := logContainerID(w, pod, "c", true); id != "prev" || err != nil {
		t.Fatalf("previous: %q %v", id, err)
	}
}
