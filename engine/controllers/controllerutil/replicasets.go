package controllerutil

import (
	apps "k8s.io/api/apps/v1"
)

// ReplicaSetsByCreationTimestamp sorts oldest first, names breaking ties.
type ReplicaSetsByCreationTimestamp []*apps.ReplicaSet

// Len implements sort.Interface.
func (o ReplicaSetsByCreationTimestamp) Len() int { return len(o) }

// Swap implements sort.Interface.
func (o ReplicaSetsByCreationTimestamp) Swap(i, j int) { o[i], o[j] = o[j], o[i] }

// Less implements sort.Interface.
func (o ReplicaSetsByCreationTimestamp) Less(i, j int) bool {
	if o[i].CreationTimestamp.Equal(&o[j].CreationTimestamp) {
		return o[i].Name < o[j].Name
	}
	return o[i].CreationTimestamp.Before(&o[j].CreationTimestamp)
}

// ReplicaSetsBySizeOlder sorts largest first, older first among equals.
type ReplicaSetsBySizeOlder []*apps.ReplicaSet

// Len implements sort.Interface.
func (o ReplicaSetsBySizeOlder) Len() int { return len(o) }

// Swap implements sort.Interface.
func (o ReplicaSetsBySizeOlder) Swap(i, j int) { o[i], o[j] = o[j], o[i] }

// Less implements sort.Interface.
func (o ReplicaSetsBySizeOlder) Less(i, j int) bool {
	if *o[i].Spec.Replicas == *o[j].Spec.Replicas {
		return ReplicaSetsByCreationTimestamp(o).Less(i, j)
	}
	return *o[i].Spec.Replicas > *o[j].Spec.Replicas
}

// ReplicaSetsBySizeNewer sorts largest first, newer first among equals.
type ReplicaSetsBySizeNewer []*apps.ReplicaSet

// Len implements sort.Interface.
func (o ReplicaSetsBySizeNewer) Len() int { return len(o) }

// Swap implements sort.Interface.
func (o ReplicaSetsBySizeNewer) Swap(i, j int) { o[i], o[j] = o[j], o[i] }

// Less implements sort.Interface.
func (o ReplicaSetsBySizeNewer) Less(i, j int) bool {
	if *o[i].Spec.Replicas == *o[j].Spec.Replicas {
		return ReplicaSetsByCreationTimestamp(o).Less(j, i)
	}
	return *o[i].Spec.Replicas > *o[j].Spec.Replicas
}

// FilterActiveReplicaSets returns the replica sets that want pods.
func FilterActiveReplicaSets(rss []*apps.ReplicaSet) []*apps.ReplicaSet {
	var out []*apps.ReplicaSet
	for _, rs := range rss {
		if rs != nil && *rs.Spec.Replicas > 0 {
			out = append(out, rs)
		}
	}
	return out
}
