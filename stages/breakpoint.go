package stages

// Breakpoint stops the pods in Scope before Stage.
type Breakpoint struct {
	Stage ID    `json:"stage"`
	Scope Scope `json:"scope"`
}

// Held is a pod waiting at a breakpoint.
type Held struct {
	// Pod is the pod's namespace/name.
	Pod   string `json:"pod"`
	Stage ID     `json:"stage"`
}
