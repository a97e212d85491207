// Package cri is the contract between podtrace's nodes and their container
// runtimes, so that neither side names the other: a runtime package
// (engine/cri/sim, engine/cri/containerd) offers a Factory that starts one
// node's runtime from its Config, and calls back the node's Observer, the
// CRI seam (engine/hooks/cri), where the seam has no CRI call of its own
// to watch: the CNI ADD and DEL that run inside RunPodSandbox and
// StopPodSandbox, and, for a runtime that plays the pods' applications, the
// ports to answer on and whether a pod is healthy. engine/nodeset picks the
// Factory and puts the seam in front of what it returns.
//
// Adding a runtime is one package with a Factory, and one entry where the
// runtime is chosen: engine/cri/runtimes, which starts it as a Host for
// every node of the process (--runtime names it).
package cri
