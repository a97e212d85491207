// Command podtrace-cni is the CNI plugin podtrace chains in front of a
// node's pod network when it runs real containers (--runtime containerd):
// containerd's CRI plugin runs it for every sandbox, and it runs the
// network's real plugin (bridge with host-local IPAM) as its delegate, as
// flannel's plugin does. Around each ADD and DEL it tells podtrace, over
// the unix socket its configuration names, which pod it is for and what
// the delegate did (interface, address, duration): that is the pod's cni
// stage. podtrace may answer with a fault, which the plugin returns as its
// error, so containerd and the kubelet report it in their own words
// (FailedCreatePodSandBox). When podtrace is not there to ask (it has
// stopped while containerd tears pods down), the plugin only delegates.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/podtrace/podtrace/engine/cri/containerd/cniwire"
)

// conf is the plugin's network configuration.
type conf struct {
	types.NetConf
	// Node names the node whose containerd runs this network.
	Node string `json:"node"`
	// Socket is podtrace's unix socket.
	Socket string `json:"socket"`
	// Delegate is the real plugin's configuration (its type and options);
	// cniVersion and name are the network's.
	Delegate map[string]any `json:"delegate"`
	// Gateway is the node's address on its pods' bridge: a hostPort
	// without a hostIP is served there (see hostPorts).
	Gateway string `json:"gateway"`
	// RuntimeConfig carries the pod's hostPorts, which containerd passes
	// to a plugin with the portMappings capability.
	RuntimeConfig struct {
		PortMappings []portMapping `json:"portMappings,omitempty"`
	} `json:"runtimeConfig"`
}

// portMapping is one hostPort, in the CNI portMappings convention.
type portMapping struct {
	HostPort      int    `json:"hostPort"`
	ContainerPort int    `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

func main() {
	skel.PluginMainFuncs(skel.CNIFuncs{Add: add, Del: del, Check: check}, version.All, "podtrace-cni: reports a pod's network setup to podtrace")
}

func add(args *skel.CmdArgs) error {
	c, delegate, err := load(args.StdinData)
	if err != nil {
		return err
	}
	ask, err := askPodtrace(c, "ADD", args)
	if err != nil {
		return err
	}
	start := time.Now()
	r, err := invoke.DelegateAdd(context.Background(), c.Delegate["type"].(string), delegate, nil)
	if err == nil {
		r, err = portMapAdd(c, r)
	}
	report := cniwire.Report{Duration: time.Since(start)}
	var res *current.Result
	if err == nil {
		if res, err = current.NewResultFromResult(r); err == nil && len(res.IPs) > 0 {
			report.IP = res.IPs[0].Address.String()
		}
	}
	if err != nil {
		report.Error = err.Error()
	}
	ask(report)
	if err != nil {
		return err
	}
	return types.PrintResult(res, c.CNIVersion)
}

func del(args *skel.CmdArgs) error {
	c, delegate, err := load(args.StdinData)
	if err != nil {
		return err
	}
	unlock, err := lockDel()
	if err != nil {
		return err
	}
	defer unlock()
	ask, err := askPodtrace(c, "DEL", args)
	if err != nil {
		return err
	}
	start := time.Now()
	err = errors.Join(portMapDel(c), invoke.DelegateDel(context.Background(), c.Delegate["type"].(string), delegate, nil))
	report := cniwire.Report{Duration: time.Since(start)}
	if err != nil {
		report.Error = err.Error()
	}
	ask(report)
	return err
}

// delLock is the file whose lock makes this host's DELs take turns.
var delLock = filepath.Join(os.TempDir(), "podtrace-cni-del.lock")

// lockDel waits until no other DEL runs on this host. containerd may tear
// the same sandbox's network down twice at once (the kubelet's
// StopPodSandbox and another's, while a node stops); the bridge plugin's
// DEL then finds eth0, and fails to delete it when the other has ("no
// such device"). In turn, the second DEL finds nothing left, which the
// CNI spec makes a success.
func lockDel() (unlock func(), err error) {
	f, err := os.OpenFile(delLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("podtrace-cni: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("podtrace-cni: lock %s: %w", delLock, err)
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}

func check(args *skel.CmdArgs) error {
	c, delegate, err := load(args.StdinData)
	if err != nil {
		return err
	}
	return invoke.DelegateCheck(context.Background(), c.Delegate["type"].(string), delegate, nil)
}

// load parses the configuration and returns the delegate's, with the
// network's cniVersion and name.
func load(stdin []byte) (*conf, []byte, error) {
	var c conf
	if err := json.Unmarshal(stdin, &c); err != nil {
		return nil, nil, fmt.Errorf("podtrace-cni: parse configuration: %w", err)
	}
	if t, _ := c.Delegate["type"].(string); t == "" {
		return nil, nil, errors.New("podtrace-cni: the configuration has no delegate type")
	}
	c.Delegate["cniVersion"] = c.CNIVersion
	c.Delegate["name"] = c.Name
	b, err := json.Marshal(c.Delegate)
	return &c, b, err
}

// askPodtrace tells podtrace a command is about to run and returns its
// fault as an error, or a func that reports the outcome. Without podtrace
// to ask, the command goes ahead and nothing is reported.
func askPodtrace(c *conf, command string, args *skel.CmdArgs) (func(cniwire.Report), error) {
	nothing := func(cniwire.Report) {}
	if c.Socket == "" {
		return nothing, nil
	}
	nc, err := net.DialTimeout("unix", c.Socket, time.Second)
	if err != nil {
		return nothing, nil
	}
	conn := cniwire.Wrap(nc)
	k8s := podArgs(args.Args)
	req := cniwire.Request{Command: command, Node: c.Node, Namespace: k8s["K8S_POD_NAMESPACE"], Name: k8s["K8S_POD_NAME"],
		UID: k8s["K8S_POD_UID"], Sandbox: args.ContainerID, IfName: args.IfName}
	var v cniwire.Verdict
	if err := conn.Send(req); err != nil || conn.Receive(&v) != nil {
		conn.Close()
		return nothing, nil
	}
	if v.Error != "" {
		conn.Close()
		return nil, errors.New(v.Error)
	}
	return func(r cniwire.Report) {
		_ = conn.Send(r)
		var ack cniwire.Verdict
		_ = conn.Receive(&ack)
		conn.Close()
	}, nil
}

// podArgs parses CNI_ARGS ("K=V;K=V").
func podArgs(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}
