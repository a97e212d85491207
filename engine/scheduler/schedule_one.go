package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
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

	assumed := pod.DeepCopy()
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
			var err *framework.Status
			if feasible, err = s.findNodesThatPassFilters(ctx, state, pod, candidates, &d); err != nil {
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
	detailed := func(int) bool { return true }
	if len(scores) > maxDetailedScores {
		totals := make([]int64, len(scores))
		for i, ns := range scores {
			totals[i] = ns.TotalScore
		}
		slices.Sort(totals)
		cut := totals[len(totals)-topScoreDetails]
		detailed = func(i int) bool { return scores[i].TotalScore > cut || scores[i].Name == chosen }
	}
	for i, ns := range scores {
		if !detailed(i) {
			continue
		}
		v := stages.NodeVerdict{Node: ns.Name, Total: ns.TotalScore, Scores: make(map[string]int64, len(ns.Scores))}
		for _, ps := range ns.Scores {
			v.Scores[ps.Name] = ps.Score
		}
		r.Nodes = append(r.Nodes, v)
	}
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
// found. Rejections are recorded in d.
func (s *Scheduler) findNodesThatPassFilters(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, d *framework.Diagnosis) ([]*framework.NodeInfo, *framework.Status) {
	numAll := len(nodes)
	toFind := s.numFeasibleNodesToFind(numAll)
	if !s.fwk.HasScorePlugins() {
		toFind = 1
	}
	start := s.nextStartNodeIndex % numAll
	feasibleIdx := make([]int, toFind)
	var feasibleLen int32
	statuses := make([]*framework.Status, numAll)
	var errOnce sync.Once
	var firstErr *framework.Status
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workqueue.ParallelizeUntil(fctx, s.workers, numAll, func(i int) {
		idx := (start + i) % numAll
		st := s.fwk.RunFilterPlugins(fctx, state, pod, nodes[idx])
		switch {
		case st.IsSuccess():
			n := atomic.AddInt32(&feasibleLen, 1)
			if int(n) > toFind {
				cancel()
				atomic.AddInt32(&feasibleLen, -1)
				return
			}
			feasibleIdx[n-1] = i
		case st.Code() == framework.Error:
			errOnce.Do(func() { firstErr = st })
			cancel()
		default:
			statuses[idx] = st
		}
	}, workqueue.WithChunkSize(framework.ChunkSizeFor(numAll, s.workers)))
	if firstErr != nil {
		return nil, firstErr
	}
	processed := int(feasibleLen)
	for idx, st := range statuses {
		if st != nil {
			d.NodeToStatus[nodes[idx].Node().Name] = st
			d.UnschedulablePlugins[st.Plugin()] = true
			processed++
		}
	}
	s.nextStartNodeIndex = (start + processed) % numAll
	// Keep the search order so that the same seed picks the same node.
	idxs := feasibleIdx[:feasibleLen]
	sort.Ints(idxs)
	feasible := make([]*framework.NodeInfo, len(idxs))
	for k, i := range idxs {
		feasible[k] = nodes[(start+i)%numAll]
	}
	return feasible, nil
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
