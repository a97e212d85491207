// Package cache keeps the scheduler's view of nodes and the pods assigned to
// them (including pods assumed but not yet bound), and hands out snapshots
// that are updated incrementally: only nodes changed since the last snapshot
// are copied.
package cache

import (
	"fmt"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
)

type podState struct {
	pod     *v1.Pod
	assumed bool
}

// Cache is the scheduler cache. It is safe for concurrent use.
type Cache struct {
	mu         sync.Mutex
	nodes      map[string]*framework.NodeInfo
	pods       map[types.UID]*podState
	generation int64
	// nodeSetChanged counts additions and removals of nodes, so that
	// snapshots know when to rebuild their node list.
	nodeSetChanged int64
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{nodes: map[string]*framework.NodeInfo{}, pods: map[types.UID]*podState{}}
}

func (c *Cache) touch(ni *framework.NodeInfo) {
	c.generation++
	ni.Generation = c.generation
}

func (c *Cache) nodeInfo(name string) *framework.NodeInfo {
	ni, ok := c.nodes[name]
	if !ok {
		ni = framework.NewNodeInfo(nil)
		c.nodes[name] = ni
	}
	return ni
}

// AddNode adds or replaces a node.
func (c *Cache) AddNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni := c.nodeInfo(node.Name)
	if ni.Node() == nil {
		c.nodeSetChanged++
	}
	ni.SetNode(node)
	c.touch(ni)
}

// UpdateNode replaces a node.
func (c *Cache) UpdateNode(node *v1.Node) { c.AddNode(node) }

// RemoveNode removes a node; its pods stay accounted until they are removed.
func (c *Cache) RemoveNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni, ok := c.nodes[name]
	if !ok {
		return
	}
	c.nodeSetChanged++
	if len(ni.Pods) == 0 {
		delete(c.nodes, name)
		return
	}
	*ni = *framework.NewNodeInfo(nil, ni.Pods...)
	c.touch(ni)
}

// AssumePod accounts pod (with spec.nodeName set) on its node before the
// binding is confirmed, so the next scheduling cycle sees it.
func (c *Cache) AssumePod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pods[pod.UID]; ok {
		return fmt.Errorf("pod %s/%s (%s) is already in the cache", pod.Namespace, pod.Name, pod.UID)
	}
	c.addPodLocked(pod, true)
	return nil
}

// ForgetPod removes an assumed pod whose binding failed.
func (c *Cache) ForgetPod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[pod.UID]; ok && ps.assumed {
		c.removePodLocked(ps.pod)
	}
}

// AddPod accounts an assigned pod seen by the informer; an assumed pod is confirmed.
func (c *Cache) AddPod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[pod.UID]; ok {
		c.removePodLocked(ps.pod)
	}
	c.addPodLocked(pod, false)
}

// UpdatePod replaces an assigned pod.
func (c *Cache) UpdatePod(pod *v1.Pod) { c.AddPod(pod) }

// RemovePod removes an assigned pod (deleted, or finished).
func (c *Cache) RemovePod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[pod.UID]; ok {
		c.removePodLocked(ps.pod)
	}
}

// IsAssumed reports whether the pod is assumed and not yet confirmed.
func (c *Cache) IsAssumed(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[uid]
	return ok && ps.assumed
}

func (c *Cache) addPodLocked(pod *v1.Pod, assumed bool) {
	ni := c.nodeInfo(pod.Spec.NodeName)
	ni.AddPod(framework.NewPodInfo(pod))
	c.touch(ni)
	c.pods[pod.UID] = &podState{pod: pod, assumed: assumed}
}

func (c *Cache) removePodLocked(pod *v1.Pod) {
	delete(c.pods, pod.UID)
	ni, ok := c.nodes[pod.Spec.NodeName]
	if !ok {
		return
	}
	ni.RemovePod(pod)
	c.touch(ni)
	if ni.Node() == nil && len(ni.Pods) == 0 {
		delete(c.nodes, pod.Spec.NodeName)
	}
}

// Snapshot is a consistent copy of the cache for one scheduling cycle. It is
// owned by one goroutine.
type Snapshot struct {
	infos          map[string]*framework.NodeInfo
	list           []*framework.NodeInfo
	generation     int64
	nodeSetChanged int64
}

// NewSnapshot returns an empty snapshot.
func NewSnapshot() *Snapshot {
	return &Snapshot{infos: map[string]*framework.NodeInfo{}, nodeSetChanged: -1}
}

// List returns the snapshot's nodes, sorted by name.
func (s *Snapshot) List() []*framework.NodeInfo { return s.list }

// Get returns one node of the snapshot.
func (s *Snapshot) Get(name string) (*framework.NodeInfo, bool) {
	ni, ok := s.infos[name]
	return ni, ok
}

// UpdateSnapshot copies into s the nodes changed since s was last updated.
func (c *Cache) UpdateSnapshot(s *Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := false
	for name, ni := range c.nodes {
		if ni.Generation <= s.generation {
			continue
		}
		if ni.Node() == nil {
			if _, ok := s.infos[name]; ok {
				delete(s.infos, name)
				changed = true
			}
			continue
		}
		if old, ok := s.infos[name]; ok {
			*old = *ni.Clone()
		} else {
			s.infos[name] = ni.Clone()
			changed = true
		}
	}
	for name := range s.infos {
		if ni, ok := c.nodes[name]; !ok || ni.Node() == nil {
			delete(s.infos, name)
			changed = true
		}
	}
	s.generation = c.generation
	if changed || s.nodeSetChanged != c.nodeSetChanged {
		s.nodeSetChanged = c.nodeSetChanged
		s.list = s.list[:0]
		for _, ni := range s.infos {
			s.list = append(s.list, ni)
		}
		sort.Slice(s.list, func(i, j int) bool { return s.list[i].Node().Name < s.list[j].Node().Name })
	}
}
