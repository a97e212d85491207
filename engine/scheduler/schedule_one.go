package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/defaultpreemption"
	"github.com/podtrace/podtrace/engine/scheduler/queue"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// ErrNoNodesAvailable is upstream's error when the cluster has no nodes.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// Upstream's bounds on how many feasible nodes to look for.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
)

// gated is a popped pod whose schedule gate has opened.
type gated struct {
	pi    *queue.QueuedPodInfo
	fault *stages.Fault
}

func refOf(pod *v1.Pod, node string) trace.Ref {
	return trace.Ref{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Node: node,
		Owned: metav1.GetControllerOf(pod) != nil}
}

// popLoop pops pods and passes each through its schedule gate in its own
// goroutine, so that a pod held at a breakpoint or hanging does not stop the
// others. At most Parallelism pods are popped and not yet scheduled.
func (s *Scheduler) popLoop(ctx context.Context) {
	for {
		select {
		case s.popSem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		pi := s.queue.Pop(ctx)
		if pi == nil {
			return
		}
		go func() {
			f, err := s.cfg.Tracer.Gate(ctx, refOf(pi.Pod, ""), stages.Schedule, Component)
			if err != nil {
				return
			}
			select {
			case s.ready <- gated{pi: pi, fault: f}:
			case <-ctx.Done():
			}
		}()
	}
}

// scheduleLoop runs scheduling cycles one at a time, as kube-scheduler does.
func (s *Scheduler) scheduleLoop(ctx context.Context) {
	for {
		select {
		case g := <-s.ready:
			<-s.popSem
			s.scheduleOne(ctx, g)
		case <-ctx.Done():
			return
		}
	}
}

// result is the outcome of one scheduling algorithm run.
type result struct {
	host      string
	evaluated int
	feasible  int
	verdicts  *stages.SchedulingResult
	// preemption holds the node and victims when a dry run found room.
	preemption *defaultpreemption.Result
}

// scheduleOne runs one scheduling cycle for a popped pod: snapshot, filter,
// score, pick, assume, then bind asynchronously.
func (s *Scheduler) scheduleOne(ctx context.Context, g gated) {
	pi := g.pi
	pod := pi.Pod
	if cur, err := s.podLister.Pods(pod.Namespace).Get(pod.Name); err != nil || cur.UID != pod.UID || !responsible(cur) {
		s.queue.Done(pod.UID) // deleted, recreated or bound meanwhile
		return
	}
	span := s.cfg.Tracer.BeginWith(refOf(pod, ""), stages.Schedule, Component, func(e *stages.Event) {
		e.Attempt, e.User = pi.Attempts, User
	})
	s.cache.UpdateSnapshot(s.snapshot)
	nodes := s.snapshot.List()

	if g.fault != nil {
		fe, verdicts := faultFitError(pod, nodes, g.fault)
		s.handleFailure(ctx, span, pi, framework.NewStatus(framework.Unschedulable, fe.Error()), verdicts, nil, true)
		return
	}

	state := framework.NewCycleState()
	res, st := s.schedulePod(ctx, state, pod, nodes)
	if !st.IsSuccess() {
		s.handleFailure(ctx, span, pi, st, res.verdicts, res.preemption, false)
		return
	}
	s.setLast(pod, res.verdicts)

	// A shallow copy is enough: like the informer's objects, the assumed
	// pod's nested fields are never modified, only its nodeName differs.
	assumed := new(v1.Pod)
	*assumed = *pod
	assumed.Spec.NodeName = res.host
	if err := s.cache.AssumePod(assumed); err != nil {
		s.handleFailure(ctx, span, pi, framework.AsStatus(err), res.verdicts, nil, false)
		return
	}
	span.With(func(e *stages.Event) { e.Node, e.Scheduling = res.host, res.verdicts }).
		Succeed("", fmt.Sprintf("picked %s: %d of %d nodes evaluated were feasible", res.host, res.feasible, res.evaluated))
	go s.bind(ctx, pi, assumed, res.host)
}

// schedulePod filters and scores the nodes and picks one. A rejecting status
// carries the FitError message (with the preemption sentence).
func (s *Scheduler) schedulePod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (result, *framework.Status) {
	res := result{verdicts: &stages.SchedulingResult{}}
	if len(nodes) == 0 {
		return res, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrNoNodesAvailable.Error())
	}
	d := framework.Diagnosis{NodeToStatus: map[string]*framework.Status{}, UnschedulablePlugins: map[string]bool{}}
	var feasible, excluded []*framework.NodeInfo
	pre, prePlugins, st := s.fwk.RunPreFilterPlugins(ctx, state, pod)
	if !st.IsSuccess() {
		if !st.IsRejected() {
			return res, st
		}
		d.AbsentNodesStatus, d.PreFilterMsg = st, st.Message()
		d.UnschedulablePlugins[st.Plugin()] = true
		excluded = nodes
	} else {
		candidates := nodes
		if !pre.AllNodes() {
			// Only the nodes the PreFilter plugins named; the others are
			// rejected on their behalf, as upstream does.
			candidates = nil
			for _, ni := range nodes {
				if pre.NodeNames[ni.Node().Name] {
					candidates = append(candidates, ni)
				} else {
					excluded = append(excluded, ni)
				}
			}
			d.AbsentNodesStatus = framework.NewStatus(framework.UnschedulableAndUnresolvable,
				fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", prePlugins)).WithPlugin(prePlugins[0])
		}
		if len(candidates) > 0 {
			var processed int
			var err *framework.Status
			feasible, processed, err = s.findNodesThatPassFilters(ctx, state, pod, candidates, &d)
			// Upstream moves the start on by the nodes processed, modulo
			// all the nodes, also when a filter failed.
			s.nextStartNodeIndex = (s.nextStartNodeIndex + processed) % len(nodes)
			if err != nil {
				return res, err
			}
		}
	}
	res.feasible, res.evaluated = len(feasible), len(feasible)+len(d.NodeToStatus)
	res.verdicts = verdictsOf(&d, excluded)

	if len(feasible) == 0 {
		fe := &framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: d}
		if s.fwk.HasPostFilterPlugins() {
			pst := s.fwk.RunPostFilterPlugins(ctx, state, pod, &fe.Diagnosis)
			fe.Diagnosis.PostFilterMsg = pst.Message()
			if pst.IsSuccess() {
				if v, err := state.Read(defaultpreemption.ResultKey); err == nil {
					res.preemption, _ = v.(*defaultpreemption.Result)
				}
			}
		}
		return res, framework.NewStatus(framework.Unschedulable, fe.Error())
	}
	if len(feasible) == 1 {
		res.host = feasible[0].Node().Name
		res.verdicts.Chosen = res.host
		res.verdicts.Nodes = append(res.verdicts.Nodes, stages.NodeVerdict{Node: res.host})
		sortVerdicts(res.verdicts)
		return res, nil
	}
	scores, st := s.fwk.RunScorePlugins(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return res, st
	}
	res.host = s.selectHost(scores)
	res.verdicts.Chosen = res.host
	addScoreVerdicts(res.verdicts, scores, res.host)
	sortVerdicts(res.verdicts)
	return res, nil
}

// verdictsOf lists the rejected nodes with their plugin and reason: those
// filtered, and those excluded before filtering (by PreFilter).
func verdictsOf(d *framework.Diagnosis, excluded []*framework.NodeInfo) *stages.SchedulingResult {
	r := &stages.SchedulingResult{}
	for _, ni := range excluded {
		r.Nodes = append(r.Nodes, stages.NodeVerdict{Node: ni.Node().Name, Plugin: d.AbsentNodesStatus.Plugin(), Reason: d.AbsentNodesStatus.Message()})
	}
	for name, st := range d.NodeToStatus {
		r.Nodes = append(r.Nodes, stages.NodeVerdict{Node: name, Plugin: st.Plugin(), Reason: st.Message()})
	}
	return r
}

func sortVerdicts(r *stages.SchedulingResult) {
	slices.SortFunc(r.Nodes, func(a, b stages.NodeVerdict) int { return strings.Compare(a.Node, b.Node) })
}

// Verdict limits: up to maxDetailedScores feasible nodes, each gets its
// total and per-plugin scores; beyond that (large clusters), only the
// topScoreDetails best-scored nodes and the chosen one are kept, so that an
// attempt's result stays small. Rejected nodes are always all listed.
const (
	maxDetailedScores = 100
	topScoreDetails   = 10
)

// addScoreVerdicts appends the feasible nodes' verdicts: totals, and
// per-plugin scores within the detail limits.
func addScoreVerdicts(r *stages.SchedulingResult, scores []framework.NodePluginScores, chosen string) {
	all := len(scores) <= maxDetailedScores
	var cut int64
	if !all {
		cut = tenthBestTotal(scores)
	}
	for _, ns := range scores {
		if !all && ns.TotalScore <= cut && ns.Name != chosen {
			continue
		}
		v := stages.NodeVerdict{Node: ns.Name, Total: ns.TotalScore, Scores: make(map[string]int64, len(ns.Scores))}
		for _, ps := range ns.Scores {
			v.Scores[ps.Name] = ps.Score
		}
		r.Nodes = append(r.Nodes, v)
	}
}

// tenthBestTotal returns the topScoreDetails-th highest total score,
// a total shared by several nodes counting once per node (scores holds
// more than topScoreDetails entries).
func tenthBestTotal(scores []framework.NodePluginScores) int64 {
	var top [topScoreDetails]int64 // the best totals so far, ascending
	n := 0
	for _, ns := range scores {
		t := ns.TotalScore
		if n < len(top) {
			i := n
			for ; i > 0 && top[i-1] > t; i-- {
				top[i] = top[i-1]
			}
			top[i] = t
			n++
			continue
		}
		if t <= top[0] {
			continue
		}
		i := 1
		for ; i < len(top) && top[i] < t; i++ {
			top[i-1] = top[i]
		}
		top[i-1] = t
	}
	return top[0]
}

// numFeasibleNodesToFind is upstream's cut-off: every node below 100 nodes,
// otherwise PercentageOfNodesToScore (adaptive when 0) but at least 100.
func (s *Scheduler) numFeasibleNodesToFind(numAllNodes int) int {
	if numAllNodes < minFeasibleNodesToFind {
		return numAllNodes
	}
	pct := s.cfg.PercentageOfNodesToScore
	if pct == 0 {
		pct = 50 - int32(numAllNodes)/125
		if pct < minFeasibleNodesPercentageToFind {
			pct = minFeasibleNodesPercentageToFind
		}
	}
	n := numAllNodes * int(pct) / 100
	if n < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return n
}

// findNodesThatPassFilters runs the filters over the nodes in parallel,
// starting where the previous cycle stopped, until enough feasible nodes are
// found. Rejections are recorded in d, also when a filter errs. It returns
// the feasible nodes in search order (valid until the next call: cycles run
// one at a time and reuse the memory) and how many nodes were processed.
func (s *Scheduler) findNodesThatPassFilters(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, d *framework.Diagnosis) ([]*framework.NodeInfo, int, *framework.Status) {
	numAll := len(nodes)
	toFind := s.numFeasibleNodesToFind(numAll)
	if !s.fwk.HasScorePlugins() {
		toFind = 1
	}
	start := s.nextStartNodeIndex
	b := &s.filterBufs
	b.found = slices.Grow(b.found[:0], toFind)[:toFind]
	b.statuses = slices.Grow(b.statuses[:0], numAll)[:numAll]
	clear(b.statuses)
	found, statuses := b.found, b.statuses
	var feasibleLen int32
	var errOnce sync.Once
	var firstErr *framework.Status
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workqueue.ParallelizeUntil(fctx, s.workers, numAll, func(i int) {
		st := s.fwk.RunFilterPlugins(fctx, state, pod, nodes[(start+i)%numAll])
		switch {
		case st.IsSuccess():
			n := atomic.AddInt32(&feasibleLen, 1)
			if int(n) > toFind {
				cancel()
				atomic.AddInt32(&feasibleLen, -1)
				return
			}
			found[n-1] = i
		case st.Code() == framework.Error:
			errOnce.Do(func() { firstErr = st })
			cancel()
		default:
			statuses[i] = st
		}
	}, workqueue.WithChunkSize(framework.ChunkSizeFor(numAll, s.workers)))
	processed := int(feasibleLen)
	for i, st := range statuses {
		if st != nil {
			d.NodeToStatus[nodes[(start+i)%numAll].Node().Name] = st
			d.UnschedulablePlugins[st.Plugin()] = true
			processed++
		}
	}
	if firstErr != nil {
		return nil, processed, firstErr
	}
	// Keep the search order so that the same seed picks the same node.
	idxs := found[:feasibleLen]
	slices.Sort(idxs)
	b.feasible = slices.Grow(b.feasible[:0], len(idxs))[:len(idxs)]
	for k, i := range idxs {
		b.feasible[k] = nodes[(start+i)%numAll]
	}
	return b.feasible, processed, nil
}

// filterBufs are the slices findNodesThatPassFilters needs per cycle, kept
// from one cycle to the next.
type filterBufs struct {
	found    []int // search positions of the feasible nodes
	statuses []*framework.Status
	feasible []*framework.NodeInfo
}

// selectHost picks the highest total score; ties are broken at random
// (reservoir sampling with the seeded generator), as kube-scheduler does.
func (s *Scheduler) selectHost(scores []framework.NodePluginScores) string {
	best, ties := 0, 1
	for i := 1; i < len(scores); i++ {
		switch {
		case scores[i].TotalScore > scores[best].TotalScore:
			best, ties = i, 1
		case scores[i].TotalScore == scores[best].TotalScore:
			ties++
			if s.rand.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return scores[best].Name
}
