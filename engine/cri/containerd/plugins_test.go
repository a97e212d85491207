package containerd

import (
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/engine/cri/containerd/cniwire"
	"github.com/podtrace/podtrace/engine/cri/critest"
)

// plugin plays podtrace-cni's side of one exchange, as cmd/podtrace-cni
// does: the request, podtrace's verdict, then (when let through) the
// delegate's report. It returns the verdict's error.
func plugin(t *testing.T, socket string, req cniwire.Request, report cniwire.Report) string {
	t.Helper()
	nc, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	c := cniwire.Wrap(nc)
	defer c.Close()
	var v cniwire.Verdict
	if err := c.Send(req); err != nil || c.Receive(&v) != nil {
		t.Fatalf("asking podtrace: %v", err)
	}
	if v.Error != "" {
		return v.Error
	}
	if err := c.Send(report); err != nil || c.Receive(&v) != nil {
		t.Fatalf("reporting to podtrace: %v", err)
	}
	return ""
}

// The plugin server makes each podtrace-cni ADD of a node its observer's
// NetworkAdd (a delegating plugin, in the node's range) and each DEL its
// NetworkDel; a node with no observer lets every command through.
func TestPluginsTellTheObserver(t *testing.T) {
	s, err := listenPlugins(filepath.Join(t.TempDir(), "cni.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.setRange("node-1", "10.244.1.1-10.244.1.254")
	type added struct {
		n  cri.Network
		ip string
	}
	adds, dels := make(chan added, 1), make(chan string, 1)
	s.observe("node-1", critest.Observer{
		Add: func(n cri.Network, add func() (string, error)) (string, error) {
			if n.Pod.GetName() == "refused" {
				return "", errors.New("no IP addresses available")
			}
			ip, err := add()
			adds <- added{n, ip}
			return ip, err
		},
		Del: func(sandboxID, ifName string, took time.Duration, err error) {
			dels <- sandboxID + " " + ifName + " " + took.String() + " " + err.Error()
		},
	})
	req := cniwire.Request{Command: "ADD", Node: "node-1", Namespace: "default", Name: "web", Sandbox: "sb1", IfName: "eth0"}
	if v := plugin(t, s.addr(), req, cniwire.Report{IP: "10.244.1.2/24"}); v != "" {
		t.Fatalf("ADD refused: %s", v)
	}
	got := <-adds
	want := cri.Network{Pod: got.n.Pod, SandboxID: "sb1", RangeSet: "10.244.1.1-10.244.1.254", Plugin: PluginName, Delegating: true}
	if got.n != want || got.n.Pod.GetNamespace() != "default" || got.n.Pod.GetName() != "web" || got.ip != "10.244.1.2/24" {
		t.Errorf("observer saw %+v (pod %v), ADD gave %q; want %+v and 10.244.1.2/24", got.n, got.n.Pod, got.ip, want)
	}
	req.Name = "refused"
	if v := plugin(t, s.addr(), req, cniwire.Report{}); v != "no IP addresses available" {
		t.Errorf("a refused ADD's verdict %q, want the observer's error", v)
	}
	req.Command = "DEL"
	plugin(t, s.addr(), req, cniwire.Report{Error: "no such device", Duration: time.Millisecond})
	if d := <-dels; d != "sb1 eth0 1ms no such device" {
		t.Errorf("observer told of DEL %q", d)
	}
	req.Node, req.Command = "node-2", "ADD"
	if v := plugin(t, s.addr(), req, cniwire.Report{}); v != "" {
		t.Errorf("a node with no observer refused its ADD: %s", v)
	}
}
