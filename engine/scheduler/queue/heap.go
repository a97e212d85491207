package queue

import (
	"container/heap"

	"k8s.io/apimachinery/pkg/types"
)

// podHeap is a container/heap of queued pods ordered by less.
type podHeap struct {
	items []*QueuedPodInfo
	less  func(a, b *QueuedPodInfo) bool
}

// Len, Less, Swap, Push and Pop implement heap.Interface.
func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index, h.items[j].index = i, j
}
func (h *podHeap) Push(x any) {
	pi := x.(*QueuedPodInfo)
	pi.index = len(h.items)
	h.items = append(h.items, pi)
}
func (h *podHeap) Pop() any {
	n := len(h.items)
	pi := h.items[n-1]
	h.items[n-1] = nil
	h.items = h.items[:n-1]
	return pi
}

// remove deletes the pod with uid, if present.
func (h *podHeap) remove(uid types.UID) {
	for i, pi := range h.items {
		if pi.Pod.UID == uid {
			heapRemove(h, i)
			return
		}
	}
}

func heapRemove(h *podHeap, i int) { heap.Remove(h, i) }
