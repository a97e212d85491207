package framework

import (
	"context"
	"fmt"
	"math"
	"sort"
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

	// Buffers reused by RunScorePlugins from one call to the next.
	rawBuf   []NodeScore
	outBuf   []NodePluginScores
	scoreBuf []PluginScore
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
// stops the run and is returned with the plugin's name set. The result
// intersects the plugins' node restrictions; plugins names those that
// restricted the nodes, sorted.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod) (result *PreFilterResult, plugins []string, status *Status) {
	skip := map[string]bool{}
	for _, p := range f.preFilter {
		r, s := p.PreFilter(ctx, state, pod)
		switch {
		case s.IsSkip():
			skip[p.Name()] = true
			continue
		case !s.IsSuccess():
			return nil, plugins, s.WithPlugin(p.Name())
		}
		if r.AllNodes() {
			continue
		}
		plugins = append(plugins, p.Name())
		result = result.Merge(r)
		if len(result.NodeNames) == 0 {
			sort.Strings(plugins)
			msg := fmt.Sprintf("node(s) didn't satisfy plugin(s) %v simultaneously", plugins)
			if len(plugins) == 1 {
				msg = fmt.Sprintf("node(s) didn't satisfy plugin %v", plugins[0])
			}
			return result, plugins, NewStatus(UnschedulableAndUnresolvable, msg).WithPlugin(p.Name())
		}
	}
	sort.Strings(plugins)
	state.filters = state.filters[:0]
	for _, p := range f.filter {
		if !skip[p.Name()] {
			state.filters = append(state.filters, p)
		}
	}
	state.filtersSet = true
	return result, plugins, nil
}

// RunFilterPlugins implements Handle: it runs the filters on one node, in
// order, and returns the first non-success status with its plugin set.
// Filters whose PreFilter asked to be skipped in this cycle are not run.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status {
	filters := f.filter
	if state.filtersSet {
		filters = state.filters
	}
	for _, p := range filters {
		if s := p.Filter(ctx, state, pod, nodeInfo); !s.IsSuccess() {
			if !s.IsRejected() && s.Code() != Error {
				s = NewStatus(Error, fmt.Sprintf("filter plugin %q returned %v", p.Name(), s.Code()))
			}
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// RunPostFilterPlugins runs the PostFilter plugins as kube-scheduler does:
// the first success or UnschedulableAndUnresolvable ends the run, an error
// is returned as is, and otherwise the result is Unschedulable with every
// plugin's reasons (joined into the FitError's message).
func (f *Framework) RunPostFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, d *Diagnosis) *Status {
	var reasons []string
	rejector := ""
	for _, p := range f.postFilter {
		s := p.PostFilter(ctx, state, pod, d)
		switch {
		case s.IsSuccess():
			return s
		case s.Code() == UnschedulableAndUnresolvable:
			return s.WithPlugin(p.Name())
		case !s.IsRejected():
			return s.WithPlugin(p.Name())
		}
		reasons = append(reasons, s.Reasons()...)
		if rejector == "" {
			rejector = p.Name()
		}
	}
	return NewStatus(Unschedulable, reasons...).WithPlugin(rejector)
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
// weights. The result is in the order of nodes; it is only valid until the
// next call (its memory is reused), and calls must not overlap.
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
	n := len(nodes)
	f.rawBuf = grow(f.rawBuf, len(active)*n)
	flat := f.rawBuf
	raw := make([][]NodeScore, len(active))
	for i := range raw {
		raw[i] = flat[i*n : (i+1)*n : (i+1)*n]
	}
	var mu sync.Mutex
	var firstErr *Status
	workqueue.ParallelizeUntil(ctx, f.parallelism, n, func(k int) {
		for i, p := range active {
			score, s := p.Score(ctx, state, pod, nodes[k])
			if !s.IsSuccess() {
				mu.Lock()
				if firstErr == nil {
					firstErr = s.WithPlugin(p.Name())
				}
				mu.Unlock()
				return
			}
			raw[i][k] = NodeScore{Name: nodes[k].Node().Name, Score: score}
		}
	}, workqueue.WithChunkSize(ChunkSizeFor(n, f.parallelism)))
	if firstErr != nil {
		return nil, firstErr
	}
	f.outBuf = grow(f.outBuf, n)
	f.scoreBuf = grow(f.scoreBuf, n*len(active))
	out, all := f.outBuf, f.scoreBuf
	for k := range nodes {
		out[k] = NodePluginScores{Name: nodes[k].Node().Name, Scores: all[k*len(active) : k*len(active) : (k+1)*len(active)]}
	}
	for i, p := range active {
		if norm, ok := p.(ScoreNormalizer); ok {
			if s := norm.NormalizeScore(ctx, state, pod, raw[i]); !s.IsSuccess() {
				return nil, s.WithPlugin(p.Name())
			}
		}
		w := f.weights[p.Name()]
		for k := range nodes {
			sc := raw[i][k].Score
			if sc > MaxNodeScore || sc < 0 {
				return nil, NewStatus(Error, fmt.Sprintf("plugin %q returns an invalid score %v, it should in the range of [%v, %v] after normalizing", p.Name(), sc, 0, MaxNodeScore)).WithPlugin(p.Name())
			}
			out[k].Scores = append(out[k].Scores, PluginScore{Name: p.Name(), Score: sc * w})
			out[k].TotalScore += sc * w
		}
	}
	return out, nil
}

// ChunkSizeFor is upstream's chunk size for parallelizing n pieces of work:
// the square root of n, at most n/parallelism+1, at least 1.
func ChunkSizeFor(n, parallelism int) int {
	c := int(math.Sqrt(float64(n)))
	if r := n/parallelism + 1; c > r {
		c = r
	} else if c < 1 {
		c = 1
	}
	return c
}

// grow returns buf resized to n elements, reallocating only when too small.
func grow[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}
