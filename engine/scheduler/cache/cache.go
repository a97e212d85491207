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
	// dirty names the nodes changed since the snapshot last updated
	// (lastSnapshot); another snapshot falls back to a full scan.
	dirty        map[string]struct{}
	lastSnapshot *Snapshot
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{nodes: map[string]*framework.NodeInfo{}, pods: map[types.UID]*podState{}, dirty: map[string]struct{}{}}
}

func (c *Cache) touch(name string, ni *framework.NodeInfo) {
	c.generation++
	ni.Generation = c.generation
	c.dirty[name] = struct{}{}
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
	c.touch(node.Name, ni)
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
	c.dirty[name] = struct{}{}
	if len(ni.Pods) == 0 {
		delete(c.nodes, name)
		return
	}
	*ni = *framework.NewNodeInfo(nil, ni.Pods...)
	c.touch(name, ni)
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

// RemovePod removes an assigned pod (deleted, or finished); it reports
// whether the pod was accounted.
func (c *Cache) RemovePod(pod *v1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[pod.UID]
	if ok {
		c.removePodLocked(ps.pod)
	}
	return ok
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
	c.touch(pod.Spec.NodeName, ni)
	c.pods[pod.UID] = &podState{pod: pod, assumed: assumed}
}

func (c *Cache) removePodLocked(pod *v1.Pod) {
	delete(c.pods, pod.UID)
	ni, ok := c.nodes[pod.Spec.NodeName]
	if !ok {
		return
	}
	ni.RemovePod(pod)
	c.touch(pod.Spec.NodeName, ni)
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
// For the snapshot updated last it visits only the changed nodes.
func (c *Cache) UpdateSnapshot(s *Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastSnapshot == s && s.generation == c.generation && s.nodeSetChanged == c.nodeSetChanged {
		return
	}
	changed := false
	update := func(name string) {
		ni, ok := c.nodes[name]
		if !ok || ni.Node() == nil {
			if _, had := s.infos[name]; had {
				delete(s.infos, name)
				changed = true
			}
			return
		}
		if ni.Generation <= s.generation {
			return
		}
		if old, had := s.infos[name]; had {
			*old = *ni.Clone()
		} else {
			s.infos[name] = ni.Clone()
			changed = true
		}
	}
	if c.lastSnapshot == s {
		for name := range c.dirty {
			update(name)
		}
	} else {
		for name := range c.nodes {
			update(name)
		}
		for name := range s.infos {
			update(name)
		}
	}
	clear(c.dirty)
	c.lastSnapshot = s
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
