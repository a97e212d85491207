// Package lanes folds stage events into swimlanes: one Lane per object (pod,
// ReplicaSet, Deployment), one Cell per stage, ordered as a tree of owners
// (Deployment → ReplicaSet → pods). It does no drawing; the UI reads it.
package lanes

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/podtrace/podtrace/stages"
)

// State is where a cell stands.
type State int

// The states a cell can be in.
const (
	NotReached State = iota
	InProgress
	Done
	Failed
	Retrying
	Waiting
)

// historyCap bounds how many events a cell keeps for the detail pane.
const historyCap = 8

// Cell is one stage of one lane.
type Cell struct {
	State    State
	Start    time.Time     // when the current attempt started
	End      time.Time     // when it ended (terminal states)
	Duration time.Duration // from the terminal event
	Attempt  int
	Reason   string
	Message  string
	NextTry  time.Time // for Retrying
	// Last is the latest event; History the latest few, oldest first.
	Last    stages.Event
	History []stages.Event
}

// Lane is one object's row.
type Lane struct {
	Kind, Namespace, Name string
	Node                  string
	Cells                 [len(stagesAll)]Cell
	// Status is what kubectl's STATUS column would say (Pending,
	// ContainerCreating, Running, ImagePullBackOff, Terminating, ...).
	Status string
	// Phase is the pod phase used for the header counts.
	Phase string
	// First and LastTime bound the lane's events.
	First, LastTime time.Time
	// Version increases on every change; views cache on it.
	Version uint64
	// Owner is the key of the owning lane ("" when none); Depth its depth in the tree.
	Owner string
	Depth int
	// Deleted is set once the delete stage succeeded.
	Deleted bool
	// Denied is set for a pod whose create the API server refused (an API
	// stage failed and persist never succeeded): it never existed, so it
	// has no row and no phase; its owner's row shows the refusal.
	Denied bool
	// DeniedReason and DeniedMessage, on an owner, are the latest refused
	// create of one of its pods; DeniedBy is the API server's event that
	// refused it (its stage, user, verb and the whole message).
	DeniedReason, DeniedMessage string
	DeniedBy                    stages.Event
	// DeniedNextTry is when the owner's controller (DeniedRetryBy, e.g.
	// "replicaset-controller") tries the create again: the end of its
	// workqueue back-off; zero when unknown.
	DeniedNextTry time.Time
	DeniedRetryBy string
	// Pods and ReadyPods, on an owner, count its pods (refused, deleted
	// and terminating ones left out) and those Running and ready.
	Pods, ReadyPods int
	// Object is the object's latest row, as kubectl prints it; nil when
	// the source sends none. Its columns win over what events imply.
	Object *stages.Row
	// counted is the phase this lane is counted under ("" when none).
	counted string
}

var stagesAll = [18]stages.ID{}

func init() {
	if copy(stagesAll[:], stages.All) != len(stages.All) {
		panic("lanes: stagesAll is shorter than stages.All")
	}
}

// Key returns "Kind/namespace/name", unique across kinds.
func (l *Lane) Key() string { return LaneKey(l.Kind, l.Namespace, l.Name) }

// LaneKey builds a lane key.
func LaneKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// Cell returns the lane's cell for stage id.
func (l *Lane) Cell(id stages.ID) *Cell {
	i := id.Index()
	if i < 0 {
		return nil
	}
	return &l.Cells[i]
}

// TimeDependent reports whether the lane's drawing changes with the clock
// (a spinner or countdown is showing).
func (l *Lane) TimeDependent() bool {
	for i := range l.Cells {
		if s := l.Cells[i].State; s == InProgress || s == Retrying || s == Waiting {
			return true
		}
	}
	return false
}

// Store holds every lane. It is not safe for concurrent use: the UI folds
// events into it from its own update loop.
type Store struct {
	lanes    map[string]*Lane
	rows     []*Lane
	children map[string][]*Lane // owner key → its lanes, from the last rebuild
	filter   string
	dirty    bool
	// owners is set when a pod's status changed: owner summaries are stale.
	owners  bool
	Version uint64 // increases on every fold
	phases  map[string]int
}

// New returns an empty store.
func New() *Store {
	return &Store{lanes: map[string]*Lane{}, phases: map[string]int{}}
}

// Len returns how many lanes the store tracks.
func (s *Store) Len() int { return len(s.lanes) }

// Get returns the lane with key, or nil.
func (s *Store) Get(key string) *Lane { return s.lanes[key] }

// PhaseCounts returns how many pods are in each phase.
func (s *Store) PhaseCounts() map[string]int { return s.phases }

// Fold applies one event.
func (s *Store) Fold(e stages.Event) {
	kind := e.Kind
	if kind == "" {
		kind = stages.KindPod
	}
	i := e.Stage.Index()
	if i < 0 {
		return
	}
	key := LaneKey(kind, e.Namespace, e.Pod)
	l := s.lanes[key]
	if l == nil {
		l = &Lane{Kind: kind, Namespace: e.Namespace, Name: e.Pod, First: e.Time, Status: "Pending", Phase: "Pending"}
		s.lanes[key] = l
		s.dirty = true
	}
	if e.Node != "" {
		l.Node = e.Node
	}
	if e.Time.After(l.LastTime) {
		l.LastTime = e.Time
	}
	c := &l.Cells[i]
	c.Last = e
	if len(c.History) == historyCap {
		copy(c.History, c.History[1:])
		c.History = c.History[:historyCap-1]
	}
	if n := len(c.History); n > 0 {
		c.History[n-1].Scheduling = nil // only the latest attempt's verdicts are kept (in Last)
	}
	c.History = append(c.History, e)
	if e.Attempt > 0 {
		c.Attempt = e.Attempt
	}
	c.Reason, c.Message = e.Reason, e.Message
	switch e.Status {
	case stages.Started:
		c.State, c.Start, c.End, c.Duration, c.NextTry = InProgress, e.Time, time.Time{}, 0, time.Time{}
	case stages.Succeeded:
		c.State, c.End = Done, e.Time
		c.Duration = time.Duration(e.DurationMs * float64(time.Millisecond))
		if c.Start.IsZero() {
			c.Start = e.Time.Add(-c.Duration)
		}
	case stages.Failed:
		c.State, c.End = Failed, e.Time
		c.Duration = time.Duration(e.DurationMs * float64(time.Millisecond))
	case stages.Retrying:
		c.State, c.End = Retrying, e.Time
		c.Duration = time.Duration(e.DurationMs * float64(time.Millisecond))
		c.NextTry = time.Time{}
		if e.NextTry != nil {
			c.NextTry = *e.NextTry
		}
	case stages.Waiting:
		c.State = Waiting
		if c.Start.IsZero() {
			c.Start = e.Time
		}
	}
	if e.Stage == stages.Delete && e.Status == stages.Succeeded {
		l.Deleted = true
	}
	if kind == stages.KindPod {
		settle(l, e)
		if denied := deniedCreate(l); denied != l.Denied {
			l.Denied = denied
			s.dirty = true // its row comes or goes
		}
	}
	oldStatus := l.Status
	l.Status, l.Phase = status(l)
	if kind != stages.KindPod {
		s.owners = true // its own stages may have changed what it shows
	} else if oldStatus != l.Status || l.Cells[stages.Ready.Index()].State == Done || l.Denied {
		s.owners = true
	}
	if kind == stages.KindPod {
		s.count(l)
	}
	l.Version++
	s.Version++
}

// SetFilter keeps only the lanes whose key contains text (case-insensitive),
// with their owners.
func (s *Store) SetFilter(text string) {
	text = strings.ToLower(text)
	if text != s.filter {
		s.filter = text
		s.dirty = true
	}
}

// Filter returns the current filter text.
func (s *Store) Filter() string { return s.filter }

// Rows returns the lanes in display order: each Deployment, then its
// ReplicaSets, each followed by its pods; lanes without a known owner follow
// in namespace/name order. The slice is rebuilt only when lanes were added
// or the filter changed.
func (s *Store) Rows() []*Lane {
	if s.dirty {
		s.rebuild()
	}
	if s.owners {
		s.summarize()
	}
	return s.rows
}

// summarize sets each owner lane's Status to how many of its pods are ready,
// as kubectl's READY column says it ("2/3 ready"), unless the owner's own
// stages failed; Phase is "Ready" when all are, else "Progressing".
func (s *Store) summarize() {
	s.owners = false
	var count func(key string) (int, int)
	count = func(key string) (ready, total int) {
		for _, k := range s.children[key] {
			if k.Kind != stages.KindPod {
				r, t := count(k.Key())
				ready, total = ready+r, total+t
				continue
			}
			if k.Deleted || k.Denied || k.Phase == "Terminating" {
				continue
			}
			total++
			if k.Status == "Running" && k.Cells[stages.Ready.Index()].State == Done {
				ready++
			}
		}
		return ready, total
	}
	for _, l := range s.lanes {
		if l.Kind == stages.KindPod {
			continue
		}
		dr, dm, by, next, retryBy := s.deniedChild(l.Key())
		if dr != l.DeniedReason || dm != l.DeniedMessage || !next.Equal(l.DeniedNextTry) {
			l.DeniedReason, l.DeniedMessage, l.DeniedBy, l.DeniedNextTry, l.DeniedRetryBy = dr, dm, by, next, retryBy
			l.Version++
			s.Version++
		}
		st, ph := status(l)
		r, t := count(l.Key())
		l.ReadyPods, l.Pods = r, t
		if l.Object == nil && ph != "Failed" && (len(s.children[l.Key()]) > 0 || ph == "Reconciled") {
			st, ph = strconv.Itoa(r)+"/"+strconv.Itoa(t)+" ready", "Progressing"
			if r == t {
				ph = "Ready"
			}
		}
		if st != l.Status || ph != l.Phase {
			l.Status, l.Phase = st, ph
			l.Version++
			s.Version++
		}
	}
}

// deniedChild returns the reason and message of the latest refused create
// among an owner's pods, when it is later than every pod it did create,
// the event of the API stage that refused it, and when the controller
// (named) tries again.
func (s *Store) deniedChild(key string) (reason, message string, by stages.Event, next time.Time, controller string) {
	var latest, created time.Time
	for _, k := range s.children[key] {
		if k.Kind != stages.KindPod {
			continue
		}
		if !k.Denied {
			created = maxTime(created, k.First)
			continue
		}
		if k.LastTime.Before(latest) {
			continue
		}
		latest = k.LastTime
		reason, message = "FailedCreate", ""
		by, next, controller = stages.Event{}, time.Time{}, ""
		if c := k.Cell(stages.Reconcile); c.State == Failed || c.State == Retrying {
			reason, message, next, controller = reasonOr(c.Reason, reason), c.Message, c.NextTry, c.Last.Component
		}
		for _, id := range apiStages {
			if c := k.Cell(id); c.State == Failed && by.Stage == "" {
				by = c.Last // the API stage that refused it, whatever the controller's words
				if message == "" {
					message = c.Message
				}
			}
		}
	}
	if latest.Before(created) {
		return "", "", stages.Event{}, time.Time{}, ""
	}
	return reason, message, by, next, controller
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (s *Store) rebuild() {
	s.dirty = false
	children := map[string][]*Lane{}
	var roots []*Lane
	for _, l := range s.lanes {
		l.Owner = s.ownerOf(l)
		if l.Owner == "" {
			roots = append(roots, l)
		} else {
			children[l.Owner] = append(children[l.Owner], l)
		}
	}
	byName := func(ls []*Lane) {
		sort.Slice(ls, func(i, j int) bool {
			a, b := ls[i], ls[j]
			if a.Namespace != b.Namespace {
				return a.Namespace < b.Namespace
			}
			if ra, rb := kindRank(a.Kind), kindRank(b.Kind); ra != rb {
				return ra < rb
			}
			return a.Name < b.Name
		})
	}
	byName(roots)
	rows := s.rows[:0]
	var walk func(l *Lane, depth int) bool
	walk = func(l *Lane, depth int) bool {
		if l.Denied {
			return false // never created: its owner's row says so
		}
		l.Depth = depth
		kids := children[l.Key()]
		byName(kids)
		start := len(rows)
		rows = append(rows, l)
		keep := s.match(l)
		for _, k := range kids {
			if walk(k, depth+1) {
				keep = true
			}
		}
		if !keep {
			rows = rows[:start]
		}
		return keep
	}
	for _, r := range roots {
		walk(r, 0)
	}
	s.rows = rows
	s.children = children
	s.owners = true
}

func (s *Store) match(l *Lane) bool {
	if s.filter == "" {
		return true
	}
	return strings.Contains(strings.ToLower(l.Namespace+"/"+l.Name+" "+l.Node+" "+l.Status), s.filter)
}

func kindRank(k string) int {
	switch k {
	case stages.KindDeployment, stages.KindCronJob:
		return 0
	case stages.KindPod:
		return 2
	}
	return 1
}

// ownerOf derives ownership from names, as the controllers generate them: a
// ReplicaSet is "<deployment>-<hash>", a Job "<cronjob>-<time>", a pod
// "<replicaset>-<suffix>", "<statefulset>-<ordinal>", "<daemonset>-<suffix>"
// or "<job>-<suffix>".
func (s *Store) ownerOf(l *Lane) string {
	i := strings.LastIndexByte(l.Name, '-')
	if i <= 0 {
		return ""
	}
	for _, kind := range stages.OwnerKinds[l.Kind] {
		key := LaneKey(kind, l.Namespace, l.Name[:i])
		if _, ok := s.lanes[key]; ok {
			return key
		}
	}
	return ""
}
