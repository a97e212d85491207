package engine_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/kubelet/nodes"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/version"
)

func startUpstream(t *testing.T, n int) (*engine.Engine, *recorder) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := engine.Start(ctx, engine.Config{DataDir: t.TempDir(), UnsafeNoFsync: true, Nodes: nodes.Defaults(n), Seed: 1,
		Kubelet: engine.UpstreamKubelet, NewCRI: func(nodes.Spec, *engine.Engine, int64) (engine.CRI, error) {
			rt := critest.NewFakeRuntimeService()
			rt.FakeStatus = &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
				{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true}}}
			return engine.CRI{Runtime: rt, Images: critest.NewFakeImageService()}, nil
		}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := record(e)
	t.Cleanup(func() { cancel(); e.Close() })
	return e, r
}

func TestUpstreamKubeletDeploymentReachesReadyThroughEveryStage(t *testing.T) {
	e, rec := startUpstream(t, 3)
	var n *corev1.Node
	enginetest.WaitFor(t, 30*time.Second, "node-1 registered", func() bool {
		var err error
		n, err = e.AdminClient().CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
		return err == nil
	})
	if got := n.Status.NodeInfo.KubeletVersion; got != version.Kubernetes {
		t.Errorf("kubeletVersion = %q, want %q", got, version.Kubernetes)
	}
	var want []stages.ID
	for _, s := range stages.Lifecycle {
		if s != stages.CNI && s != stages.Hooks { // no postStart hook; cni comes from the runtime
			want = append(want, s)
		}
	}
	deploymentThroughEveryStage(t, e, rec, want)
}
