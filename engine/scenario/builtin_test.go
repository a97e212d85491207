package scenario_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/scenario"
	"github.com/podtrace/podtrace/internal/testproc"
	"github.com/podtrace/podtrace/internal/waittest"
)

func TestMain(m *testing.M) { enginetest.MainOwnProcesses(m) }

// startFor starts an engine with the scenario's nodes on the real kubelet,
// as `podtrace scenario` does, its clock fast.
func startFor(t *testing.T, s *scenario.Scenario) *engine.Engine {
	t.Helper()
	logs.To(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	e, err := engine.Start(ctx, engine.Config{DataDir: enginetest.DataDir(t), UnsafeNoFsync: true, Nodes: s.Nodes, Speed: 20, Seed: 1,
		MaxContainerRestartPeriod: s.MaxContainerRestartPeriod})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); e.Close() })
	return e
}

// TestBuiltinScenarioBehavesAsDocumented runs the built-in scenario that
// $SCENARIO names headless, as `podtrace scenario NAME --headless --check`
// does: its documented events and messages appear, the goal does not hold,
// and the documented fix makes it hold. It is a scenario author's quick
// check; e2e/tui's TestEveryScenarioFix plays every built-in scenario so
// in the UI (the story box waits for the same symptoms), one cluster each.
func TestBuiltinScenarioBehavesAsDocumented(t *testing.T) {
	only := os.Getenv("SCENARIO")
	if only == "" {
		t.Skip("SCENARIO names no built-in scenario; e2e/tui's TestEveryScenarioFix plays them all")
	}
	all, err := scenario.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range all {
		if s.Name != only {
			continue
		}
		found = true
		t.Run(s.Name, func(t *testing.T) {
			if testproc.OwnProcess(t) {
				return
			}
			e := startFor(t, s)
			var log strings.Builder
			rep, err := scenario.Check(context.Background(), e, s, scenario.CheckOptions{Timeout: 60 * time.Second, Log: &log})
			t.Log(log.String())
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Seen) != len(s.Expect) || rep.Broken == "" || rep.Fixed == "" {
				t.Fatalf("incomplete report %+v", rep)
			}
		})
	}
	if !found {
		t.Fatalf("SCENARIO=%s is no built-in scenario", only)
	}
}

// TestCrashLoopFixedBySetEnv follows crash-loop's hints by hand: the
// previous container's log names the missing variable, and the patch
// `kubectl set env deployment/worker QUEUE_ADDR=...` sends (a strategic
// merge of the container's env) gets every worker Ready, its log saying
// where it connects.
func TestCrashLoopFixedBySetEnv(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	s, err := scenario.Lookup("crash-loop")
	if err != nil {
		t.Fatal(err)
	}
	e := startFor(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := s.Prepare(ctx, e); err != nil {
		t.Fatal(err)
	}
	c := e.AdminClient()
	waitLog(ctx, t, c, true, "worker: QUEUE_ADDR is empty: no queue to connect to")
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"worker","env":[{"name":"QUEUE_ADDR","value":"queue.default.svc:5672"}]}]}}}}`
	if _, err := c.AppsV1().Deployments("default").Patch(ctx, "worker", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waittest.Eventually(t, "crash-loop's goal after kubectl set env", 3*time.Minute, func() (bool, string) {
		met, detail, err := s.Goal.Check(ctx, c)
		return err == nil && met, fmt.Sprintf("%s %v", detail, err)
	})
	waitLog(ctx, t, c, false, "worker: connecting to queue at queue.default.svc:5672")
}

// waitLog waits until a worker pod's log (its previous container's when
// previous) has want, as kubectl logs [--previous] shows it.
func waitLog(ctx context.Context, t *testing.T, c kubernetes.Interface, previous bool, want string) {
	t.Helper()
	var last string
	waittest.EventuallyEvery(t, fmt.Sprintf("a worker log with %q", want), 200*time.Millisecond, 3*time.Minute, func() (bool, string) {
		pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=worker"})
		if err != nil {
			return false, fmt.Sprintf("%v; last log read: %q", err, last)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
				continue
			}
			b, err := c.CoreV1().Pods("default").GetLogs(p.Name, &corev1.PodLogOptions{Previous: previous}).DoRaw(ctx)
			if last = string(b); err == nil && strings.Contains(last, want) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("last log read: %q", last)
	})
}
