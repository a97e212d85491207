package kubelet

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/version"
)

// KubeletVersion is the version the node reports.
const KubeletVersion = version.Kubernetes

// networkNotReadyMessage is why a node made NotReady is not ready.
const networkNotReadyMessage = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"

// NodeLeaseNamespace holds the nodes' Leases.
const NodeLeaseNamespace = "kube-node-lease"

// nodeObject builds the Node this kubelet registers.
func (k *Kubelet) nodeObject() *v1.Node {
	labels := map[string]string{
		v1.LabelHostname:          k.cfg.NodeName,
		v1.LabelOSStable:          "linux",
		v1.LabelArchStable:        "amd64",
		"beta.kubernetes.io/os":   "linux",
		"beta.kubernetes.io/arch": "amd64",
	}
	for key, v := range k.cfg.Labels {
		labels[key] = v
	}
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Labels: labels,
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
		Spec: v1.NodeSpec{PodCIDR: k.cfg.PodCIDR, PodCIDRs: []string{k.cfg.PodCIDR}, Taints: append([]v1.Taint(nil), k.cfg.Taints...)},
	}
	n.Status = k.nodeStatus(nil)
	return n
}

// nodeStatus returns the node's status; transition times are kept from old
// for conditions whose status did not change.
func (k *Kubelet) nodeStatus(old *v1.Node) v1.NodeStatus {
	now := metav1.NewTime(k.clock.Now())
	ready := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if k.notReady.Load() {
		ready = v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady",
			Message: networkNotReadyMessage}
	}
	conds := []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		ready,
	}
	for i := range conds {
		conds[i].LastHeartbeatTime, conds[i].LastTransitionTime = now, now
		if old == nil {
			continue
		}
		for _, o := range old.Status.Conditions {
			if o.Type == conds[i].Type && o.Status == conds[i].Status {
				conds[i].LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return v1.NodeStatus{
		Capacity:    k.cfg.Capacity.DeepCopy(),
		Allocatable: k.cfg.Capacity.DeepCopy(),
		Conditions:  conds,
		Addresses: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: k.cfg.InternalIP},
			{Type: v1.NodeHostName, Address: k.cfg.NodeName},
		},
		DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: k.APIPort()}},
		NodeInfo: v1.NodeSystemInfo{
			MachineID: k.cfg.NodeName, SystemUUID: k.cfg.NodeName, BootID: k.cfg.NodeName,
			KernelVersion: "6.12.0-podtrace", OSImage: "podtrace simulated node",
			ContainerRuntimeVersion: k.cfg.RuntimeName + "://1.0.0",
			KubeletVersion:          KubeletVersion, OperatingSystem: "linux", Architecture: "amd64",
		},
	}
}

// registerNode creates the Node, or updates its status if it exists.
func (k *Kubelet) registerNode(ctx context.Context) error {
	n := k.nodeObject()
	created, err := k.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	switch {
	case err == nil:
		// The API server drops status on create, as kube-apiserver does.
		if !equality.Semantic.DeepEqual(created.Status.Conditions, n.Status.Conditions) {
			created.Status = n.Status
			if _, err := k.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("update node status: %w", err)
			}
		}
	case apierrors.IsAlreadyExists(err):
		if err := k.updateNodeStatus(ctx, true); err != nil {
			return err
		}
	default:
		return fmt.Errorf("create node: %w", err)
	}
	k.recorder.Eventf(k.nodeRef(),
		v1.EventTypeNormal, "Starting", "Starting kubelet.")
	k.recorder.Eventf(k.nodeRef(),
		v1.EventTypeNormal, "NodeReady", "Node %s status is now: NodeReady", k.cfg.NodeName)
	return nil
}

// nodeRef is the object of node events; the kubelet uses the node name as its UID.
func (k *Kubelet) nodeRef() *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: k.cfg.NodeName, UID: types.UID(k.cfg.NodeName), APIVersion: "v1"}
}

// updateNodeStatus writes the node status when it changed or force is set.
func (k *Kubelet) updateNodeStatus(ctx context.Context, force bool) error {
	n, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node: %w", err)
	}
	st := k.nodeStatus(n)
	if !force && conditionsEqual(n.Status.Conditions, st.Conditions) {
		return nil
	}
	n.Status = st
	if _, err := k.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update node status: %w", err)
	}
	return nil
}

func conditionsEqual(a, b []v1.NodeCondition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Status != b[i].Status || a[i].Reason != b[i].Reason {
			return false
		}
	}
	return true
}

// nodeStatusLoop writes the node status when SetNotReady changes it, and
// every NodeStatusReportFrequency otherwise.
func (k *Kubelet) nodeStatusLoop(ctx context.Context) {
	t := k.clock.NewTicker(k.cfg.NodeStatusReportFrequency)
	defer t.Stop()
	for {
		force := false
		select {
		case <-ctx.Done():
			return
		case <-k.nodeDirty:
			notReady := k.notReady.Load()
			reason, msg := "NodeReady", "Node %s status is now: NodeReady"
			if notReady {
				reason, msg = "NodeNotReady", "Node %s status is now: NodeNotReady"
			}
			k.recorder.Eventf(k.nodeRef(), v1.EventTypeNormal, reason, msg, k.cfg.NodeName)
		case <-t.C():
			force = true
		}
		_ = k.updateNodeStatus(ctx, force) // retried on the next tick
	}
}

// leaseLoop creates and renews the node's Lease in kube-node-lease.
func (k *Kubelet) leaseLoop(ctx context.Context) {
	for {
		_ = k.renewLease(ctx) // a failed renewal is retried at the next interval
		select {
		case <-ctx.Done():
			return
		case <-k.clock.After(k.cfg.LeaseRenewInterval):
		}
	}
}

func (k *Kubelet) renewLease(ctx context.Context) error {
	leases := k.client.CoordinationV1().Leases(NodeLeaseNamespace)
	now := metav1.NewMicroTime(k.clock.Now())
	l, err := leases.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Namespace: NodeLeaseNamespace,
				OwnerReferences: k.nodeOwnerRef(ctx)},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(k.cfg.NodeName),
				LeaseDurationSeconds: ptr.To(int32(k.cfg.LeaseDuration / time.Second)), RenewTime: &now},
		}
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	l.Spec.RenewTime = &now
	l.Spec.HolderIdentity = ptr.To(k.cfg.NodeName)
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

func (k *Kubelet) nodeOwnerRef(ctx context.Context) []metav1.OwnerReference {
	n, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}
}
