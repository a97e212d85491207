package framework

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
)

// PluginConfig enables one plugin, with its score weight (0 means 1).
type PluginConfig struct {
	Name   string
	Weight int64
}

// Framework runs the enabled plugins of one profile at each extension point,
// in the configured order.
type Framework struct {
	preFilter   []PreFilterPlugin
	filter      []FilterPlugin
	postFilter  []PostFilterPlugin
	preScore    []PreScorePlugin
	score       []ScorePlugin
	weights     map[string]int64
	parallelism int
	nodes       func() []*NodeInfo
}

// New builds the plugins named in enabled from the registry. nodes returns the
// current snapshot's nodes (for plugins that need a Handle); parallelism
// bounds concurrent Score calls.
func New(r Registry, enabled []PluginConfig, parallelism int, nodes func() []*NodeInfo) (*Framework, error) {
	if parallelism <= 0 {
		parallelism = 16
	}
	f := &Framework{weights: map[string]int64{}, parallelism: parallelism, nodes: nodes}
	for _, pc := range enabled {
		factory, ok := r[pc.Name]
		if !ok {
			return nil, fmt.Errorf("plugin %q is not registered", pc.Name)
		}
		p, err := factory(f)
		if err != nil {
			return nil, fmt.Errorf("build plugin %q: %w", pc.Name, err)
		}
		w := pc.Weight
		if w == 0 {
			w = 1
		}
		f.weights[p.Name()] = w
		if x, ok := p.(PreFilterPlugin); ok {
			f.preFilter = append(f.preFilter, x)
		}
		if x, ok := p.(FilterPlugin); ok {
			f.filter = append(f.filter, x)
		}
		if x, ok := p.(PostFilterPlugin); ok {
			f.postFilter = append(f.postFilter, x)
		}
		if x, ok := p.(PreScorePlugin); ok {
			f.preScore = append(f.preScore, x)
		}
		if x, ok := p.(ScorePlugin); ok {
			f.score = append(f.score, x)
		}
	}
	return f, nil
}

// NodeInfos implements Handle.
func (f *Framework) NodeInfos() []*NodeInfo {
	if f.nodes == nil {
		return nil
	}
	return f.nodes()
}

// HasScorePlugins reports whether any score plugin is enabled.
func (f *Framework) HasScorePlugins() bool { return len(f.score) > 0 }

// HasPostFilterPlugins reports whether any post-filter plugin is enabled.
func (f *Framework) HasPostFilterPlugins() bool { return len(f.postFilter) > 0 }

// RunPreFilterPlugins runs the PreFilter plugins. The first rejection or error
// stops the run and is returned with the plugin's name set.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod) *Status {
	for _, p := range f.preFilter {
		s := p.PreFilter(ctx, state, pod)
		switch {
		case s.IsSkip():
			state.mu.Lock()
			state.skipFilter[p.Name()] = true
			state.mu.Unlock()
		case !s.IsSuccess():
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// RunFilterPlugins implements Handle: it runs the filters on one node, in
// order, and returns the first non-success status with its plugin set.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status {
	for _, p := range f.filter {
		state.mu.RLock()
		skip := state.skipFilter[p.Name()]
		state.mu.RUnlock()
		if skip {
			continue
		}
		if s := p.Filter(ctx, state, pod, nodeInfo); !s.IsSuccess() {
			if !s.IsRejected() && s.Code() != Error {
				s = NewStatus(Error, fmt.Sprintf("filter plugin %q returned %v", p.Name(), s.Code()))
			}
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// RunPostFilterPlugins runs the PostFilter plugins until one succeeds and
// returns the last status (its message goes into the FitError).
func (f *Framework) RunPostFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, d *Diagnosis) *Status {
	var last *Status
	for _, p := range f.postFilter {
		s := p.PostFilter(ctx, state, pod, d)
		if s.IsSuccess() {
			return s
		}
		last = s.WithPlugin(p.Name())
	}
	return last
}

// PluginScore is one plugin's weighted, normalized score of a node.
type PluginScore struct {
	Name  string
	Score int64
}

// NodePluginScores is a node's scores from every score plugin, and their sum.
type NodePluginScores struct {
	Name       string
	Scores     []PluginScore
	TotalScore int64
}

// RunScorePlugins runs PreScore, Score, NormalizeScore and applies the
// weights. The result is in the order of nodes.
func (f *Framework) RunScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) ([]NodePluginScores, *Status) {
	skip := map[string]bool{}
	for _, p := range f.preScore {
		s := p.PreScore(ctx, state, pod, nodes)
		if s.IsSkip() {
			skip[p.Name()] = true
		} else if !s.IsSuccess() {
			return nil, s.WithPlugin(p.Name())
		}
	}
	var active []ScorePlugin
	for _, p := range f.score {
		if !skip[p.Name()] {
			active = append(active, p)
		}
	}
	raw := make([][]NodeScore, len(active))
	for i := range raw {
		raw[i] = make([]NodeScore, len(nodes))
	}
	var mu sync.Mutex
	var firstErr *Status
	workqueue.ParallelizeUntil(ctx, f.parallelism, len(nodes), func(n int) {
		for i, p := range active {
			score, s := p.Score(ctx, state, pod, nodes[n])
			if !s.IsSuccess() {
				mu.Lock()
				if firstErr == nil {
					firstErr = s.WithPlugin(p.Name())
				}
				mu.Unlock()
				return
			}
			raw[i][n] = NodeScore{Name: nodes[n].Node().Name, Score: score}
		}
	})
	if firstErr != nil {
		return nil, firstErr
	}
	out := make([]NodePluginScores, len(nodes))
	for n := range nodes {
		out[n] = NodePluginScores{Name: nodes[n].Node().Name, Scores: make([]PluginScore, 0, len(active))}
	}
	for i, p := range active {
		if norm, ok := p.(ScoreNormalizer); ok {
			if s := norm.NormalizeScore(ctx, state, pod, raw[i]); !s.IsSuccess() {
				return nil, s.WithPlugin(p.Name())
			}
		}
		w := f.weights[p.Name()]
		for n := range nodes {
			sc := raw[i][n].Score
			if sc > MaxNodeScore || sc < 0 {
				return nil, NewStatus(Error, fmt.Sprintf("plugin %q returns an invalid score %v, it should in the range of [%v, %v] after normalizing", p.Name(), sc, 0, MaxNodeScore)).WithPlugin(p.Name())
			}
			out[n].Scores = append(out[n].Scores, PluginScore{Name: p.Name(), Score: sc * w})
			out[n].TotalScore += sc * w
		}
	}
	return out, nil
}
