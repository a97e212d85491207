package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/engine/cri/critest"
)

// NewNode runs each sandbox's CNI ADD through the node's observer, after
// the pause container and in the node's range; an ADD the observer fails
// fails RunPodSandbox as containerd words it. Close saves the records.
func TestNewNodeAsksTheObserver(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	var mu sync.Mutex
	var seen []cri.Network
	obs := critest.Observer{Add: func(n cri.Network, add func() (string, error)) (string, error) {
		mu.Lock()
		seen = append(seen, n)
		mu.Unlock()
		if n.Pod.GetName() == "refused" {
			return "", errors.New("no IP addresses available")
		}
		return add()
	}}
	n, err := NewNode(ctx, cri.Config{Name: "node-1", PodCIDR: "10.244.1.0/24", Seed: 1,
		Speed: func() float64 { return cri.MaxSpeed }, Dir: dir, StateFile: filepath.Join(dir, "node-1.json"), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	sandbox := func(name string) *runtimeapi.PodSandboxConfig {
		return &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Namespace: "default", Name: name, Uid: "uid-" + name}}
	}
	id, err := n.Runtime.RunPodSandbox(ctx, sandbox("web"), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = n.Runtime.RunPodSandbox(ctx, sandbox("refused"), "")
	if want := `failed to setup network for sandbox "`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("RunPodSandbox of a refused ADD: %v, want %q", err, want)
	}
	if len(seen) != 2 {
		t.Fatalf("observer saw %d ADDs, want 2", len(seen))
	}
	want := cri.Network{Pod: seen[0].Pod, SandboxID: id, RangeSet: "10.244.1.1-10.244.1.254", Plugin: "bridge", Name: "podtrace", PauseFirst: true}
	if seen[0] != want || seen[0].Pod.GetUid() != "uid-web" {
		t.Errorf("observer saw %+v, want %+v", seen[0], want)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node-1.json")); err != nil {
		t.Errorf("Close left no state file: %v", err)
	}
}
