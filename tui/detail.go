package tui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui/lanes"
)

// stageCommands are what a user would run in a real cluster to see a stage,
// beyond describe and get events. %[1]s is the name, %[2]s the namespace.
var stageCommands = map[stages.ID][]string{
	stages.Authn:     {"kubectl auth whoami"},
	stages.Authz:     {"kubectl auth can-i create pods -n %[2]s"},
	stages.Admission: {"kubectl get resourcequota,limitrange -n %[2]s", "kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations"},
	stages.Persist:   {"kubectl get pod %[1]s -n %[2]s -o jsonpath='{.metadata.resourceVersion}'"},
	stages.Reconcile: {"kubectl get pod %[1]s -n %[2]s -o jsonpath='{.metadata.ownerReferences}'", "kubectl get rs -n %[2]s"},
	stages.Schedule:  {"kubectl get pod %[1]s -n %[2]s -o jsonpath='{.status.conditions[?(@.type==\"PodScheduled\")]}'", "kubectl describe nodes"},
	stages.Bind:      {"kubectl get pod %[1]s -n %[2]s -o wide"},
	stages.Kubelet:   {"kubectl get pod %[1]s -n %[2]s -o jsonpath='{.status.qosClass}'"},
	stages.Sandbox:   {"crictl pods --name %[1]s"},
	stages.CNI:       {"kubectl get pod %[1]s -n %[2]s -o jsonpath='{.status.podIPs}'"},
	stages.Pull:      {"kubectl get pod %[1]s -n %[2]s -o jsonpath='{.status.containerStatuses[*].state}'"},
	stages.Create:    {"crictl ps -a --pod $(crictl pods -q --name %[1]s)"},
	stages.Start:     {"kubectl logs %[1]s -n %[2]s --previous"},
	stages.Hooks:     {"kubectl get pod %[1]s -n %[2]s -o jsonpath='{.spec.containers[*].lifecycle}'"},
	stages.Ready:     {"kubectl get pod %[1]s -n %[2]s -o jsonpath='{.status.conditions}'"},
}

var stateWords = map[lanes.State]string{
	lanes.NotReached: "not reached", lanes.InProgress: "in progress", lanes.Done: "done",
	lanes.Failed: "failed", lanes.Retrying: "retrying", lanes.Waiting: "waiting",
}

// detailView draws the selected lane's selected stage in w×h.
func (m *Model) detailView(w, h int, now time.Time) []string {
	pt := &m.c.Paint
	l := m.selected()
	if l == nil {
		return []string{pt.S(pMuted, "Nothing selected.")}
	}
	id := m.selectedStage()
	c := l.Cell(id)
	info := id.Describe()
	var out []string
	add := func(s ...string) { out = append(out, s...) }
	wrap := func(prefix, s string) {
		for _, line := range strings.Split(ansi.Hardwrap(ansi.Wordwrap(s, w-len(prefix), ""), w-len(prefix), true), "\n") {
			add(prefix + line)
			prefix = spaces(len(prefix))
		}
	}
	kind := strings.ToLower(l.Kind)
	add(pt.S(pTitle, string(id)) + pt.S(pMuted, " · "+info.Component) + "   " +
		pt.S(pBold, kind+"/"+l.Name) + pt.S(pMuted, " in "+l.Namespace) + nodeSuffix(l))
	wrap("", info.Summary)
	add("")

	sym, paint := m.pods.cellText(c, 1, now)
	state := pt.S(paint, sym+" "+stateWords[c.State])
	switch {
	case id == stages.Start && c.Attempt > 1:
		state += fmt.Sprintf(" (attempt %d, RESTARTS %d)", c.Attempt, l.Restarts())
	case c.Attempt > 1:
		state += fmt.Sprintf(" (attempt %d)", c.Attempt)
	}
	add("Status     " + state)
	if !c.Start.IsZero() {
		layout, fmtDuration := m.timeLayout(), m.fmtDuration
		if c.Last.Source == stages.SourceSpans { // timed to the microsecond, whatever the Source's resolution
			layout, fmtDuration = "15:04:05.000", fmtDur
		}
		timing := "Started    " + c.Start.Format(layout)
		switch c.State {
		case lanes.InProgress, lanes.Waiting:
			timing += "   running for " + fmtDuration(now.Sub(c.Start))
		case lanes.Done, lanes.Failed, lanes.Retrying:
			timing += "   took " + fmtDuration(c.Duration)
		}
		if c.State == lanes.Retrying && !c.NextTry.IsZero() {
			timing += "   next try in " + fmtDuration(c.NextTry.Sub(now))
		}
		switch {
		case c.Last.Source == stages.SourceSpans:
			timing += "   (from the cluster's own spans)"
		case m.status.Resolution > 0:
			timing += "   (timestamps to " + fmtDur(m.status.Resolution) + ")"
		}
		add(timing)
	}
	if c.Last.Component != "" {
		who := c.Last.Component
		if c.Last.User != "" {
			who += "   user " + c.Last.User
		}
		if c.Last.Verb != "" {
			who += "   verb " + c.Last.Verb
		}
		if c.Last.Container != "" {
			who += "   container " + c.Last.Container
		}
		wrap("Component  ", who)
	}
	if c.Reason != "" {
		p := pText
		if c.State == lanes.Failed || c.State == lanes.Retrying {
			p = pError
		}
		add("Reason     " + pt.S(p, c.Reason))
	}
	if c.Message != "" {
		wrap("Message    ", c.Message)
	}
	if id == stages.Reconcile && l.DeniedReason != "" {
		add("", pt.S(pBold, "A pod's create refused"))
		by := l.DeniedBy
		add("Reason     " + pt.S(pError, l.DeniedReason))
		if by.Stage != "" {
			who := string(by.Stage) + " · " + by.Component
			if by.User != "" {
				who += "   user " + by.User
			}
			if by.Verb != "" {
				who += "   verb " + by.Verb + " pods"
			}
			wrap("Refused at ", who)
		}
		wrap("Message    ", l.DeniedMessage)
		if !l.DeniedNextTry.IsZero() {
			wrap("Next try   ", ControllerBackoff(l.DeniedRetryBy, l.DeniedNextTry, now))
		}
	}
	if id == stages.Schedule && c.State == lanes.Retrying {
		wrap("Next try   ", SchedulerWait(c.Last.Time, now))
	}
	if id == stages.Schedule && c.Last.Scheduling != nil {
		add("", pt.S(pBold, "Scheduling, last attempt"))
		add(schedulingMatrix(m, c.Last.Scheduling, w)...)
	}
	if res, ok := m.detail[l.Key()]; ok && l.Kind == stages.KindPod {
		add(m.storedView(res, l, w, now)...)
	}
	if len(c.History) > 1 {
		add("", pt.S(pBold, "This stage so far"))
		for _, e := range c.History {
			line := e.Time.Format(m.timeLayout()) + "  " + fit(string(e.Status), 9) + " " + e.Reason
			if e.Attempt > 1 {
				line += fmt.Sprintf(" (attempt %d)", e.Attempt)
			}
			add("  " + clip(line, w-2))
		}
	}
	add("", pt.S(pBold, "See the same in a real cluster"))
	cmds := []string{"kubectl describe " + kind + " " + l.Name + " -n " + l.Namespace,
		"kubectl get events -n " + l.Namespace + " --field-selector involvedObject.name=" + l.Name}
	for _, f := range stageCommands[id] {
		if strings.Contains(f, "%[") {
			f = fmt.Sprintf(f, l.Name, l.Namespace)
		}
		cmds = append(cmds, f)
	}
	for _, cmd := range cmds {
		add("  " + pt.S(pAccent, clip("$ "+cmd, w-2)))
	}
	if m.detailTop > 0 {
		out = out[min(m.detailTop, max(0, len(out)-1)):]
	}
	if len(out) > h {
		out = out[:h]
	}
	for i, l := range out {
		out[i] = clip(l, w) // the pane is w wide, whatever a line holds
	}
	return out
}

// timeLayout formats clock times no finer than the Source's resolution.
func (m *Model) timeLayout() string {
	if m.status.Resolution >= time.Second {
		return "15:04:05"
	}
	return "15:04:05.000"
}

// fmtDuration is fmtDur, or the pods pane's coarse form when the Source's
// timestamps are coarse.
func (m *Model) fmtDuration(d time.Duration) string {
	if m.status.Resolution > 0 {
		return m.pods.dur(d)
	}
	return fmtDur(d)
}

func nodeSuffix(l *lanes.Lane) string {
	if l.Node == "" {
		return ""
	}
	return " on " + l.Node
}

// storedView draws the object as stored: conditions, Kubernetes events and,
// when the pod is held at a breakpoint, the object itself.
func (m *Model) storedView(res detailResult, l *lanes.Lane, w int, now time.Time) []string {
	pt := &m.c.Paint
	var out []string
	if res.err != nil {
		return []string{"", pt.S(pMuted, clip("Stored object: "+res.err.Error(), w))}
	}
	d := res.d
	if bs := d.Backoffs(); len(bs) > 0 {
		out = append(out, "", pt.S(pBold, "Back-offs"))
		for _, b := range bs {
			out = append(out, "  "+clip(b.String(now), w-2))
		}
	}
	if len(d.Conditions) > 0 {
		out = append(out, "", pt.S(pBold, "Conditions"))
		for _, c := range d.Conditions {
			line := fit(c.Type, 26) + " " + fit(c.Status, 7) + " " + c.Reason
			if c.Message != "" {
				line += " " + c.Message
			}
			out = append(out, "  "+clip(line, w-2))
		}
	}
	if len(d.Events) > 0 {
		out = append(out, "", pt.S(pBold, "Kubernetes events"))
		ages, ageW := make([]string, len(d.Events)), 9
		for i, e := range d.Events {
			ages[i] = ago(now, e.LastSeen)
			if e.Count > 1 {
				ages[i] += fmt.Sprintf(" (x%d)", e.Count)
			}
			ageW = max(ageW, len(ages[i]))
		}
		for i, e := range d.Events {
			p := pText
			if e.Type == "Warning" {
				p = pWarning
			}
			line := fit(ages[i], ageW) + " " + pt.S(p, fit(e.Type, 7)) + " " + fit(e.Reason, 18) + " " + clip(e.Message, max(10, w-31-ageW))
			out = append(out, "  "+line)
		}
	}
	held := false
	for i := range l.Cells {
		if l.Cells[i].State == lanes.Waiting && l.Cells[i].Reason == "Breakpoint" {
			held = true
		}
	}
	if held && d.Object != "" {
		out = append(out, "", pt.S(pBold, "Stored object (held at a breakpoint)"))
		for _, line := range strings.Split(strings.TrimRight(d.Object, "\n"), "\n") {
			out = append(out, "  "+clip(line, w-2))
		}
	}
	return out
}

// schedulingMatrix draws the node × plugin verdicts and scores of one attempt.
func schedulingMatrix(m *Model, r *stages.SchedulingResult, w int) []string {
	pt := &m.c.Paint
	sy := m.c.Theme.Symbols
	plugins := map[string]bool{}
	for _, n := range r.Nodes {
		for p := range n.Scores {
			plugins[p] = true
		}
	}
	names := make([]string, 0, len(plugins))
	for p := range plugins {
		names = append(names, p)
	}
	sort.Strings(names)
	nodeW := 10
	for _, n := range r.Nodes {
		nodeW = max(nodeW, min(24, len(n.Node)))
	}
	// The filter column is as wide as its longest verdict; score columns get
	// the plugins' names, or short names when those do not fit.
	verdictW := len("✓ fits")
	for _, n := range r.Nodes {
		if n.Plugin != "" {
			verdictW = max(verdictW, 4+len(n.Plugin)+len(n.Reason))
		}
	}
	filterW := max(12, min(verdictW, 60))
	room := w - 2 - nodeW - 1 - filterW - 6 - 10 // TOTAL and "▶ chosen" after the scores
	labels := make([]string, len(names))
	widths := make([]int, len(names))
	full := 0
	for _, p := range names {
		full += len(p) + 1
	}
	short := full > room
	for i, p := range names {
		labels[i] = p
		if short {
			labels[i] = shortPlugin(p)
		}
		widths[i] = max(5, len(labels[i]))
	}
	header := "  " + fit("NODE", nodeW) + " " + fit("FILTER", filterW)
	for i := range names {
		header += " " + fit(labels[i], widths[i])
	}
	header += " TOTAL"
	out := []string{pt.S(pMuted, clip(header, w))}
	for _, n := range r.Nodes {
		verdict := pt.S(pDone, fit(sy.Done+" fits", filterW))
		if n.Plugin != "" {
			verdict = pt.S(pFailed, fit(sy.Failed+" "+n.Plugin+": "+n.Reason, filterW))
		}
		line := "  " + fit(n.Node, nodeW) + " " + verdict
		if n.Plugin == "" {
			for i, p := range names {
				line += " " + fit(fmt.Sprint(n.Scores[p]), widths[i])
			}
			line += " " + fmt.Sprint(n.Total)
		}
		if n.Node == r.Chosen {
			line += pt.S(pAccent, "  "+sy.Cursor+" chosen")
		}
		out = append(out, clip(line, w))
	}
	if short {
		legend := make([]string, len(names))
		for i, p := range names {
			legend[i] = labels[i] + " = " + p
		}
		for _, l := range strings.Split(ansi.Wordwrap("scores: "+strings.Join(legend, ", "), w-2, ""), "\n") {
			out = append(out, pt.S(pMuted, "  "+clip(l, w-2)))
		}
	} else if len(names) > 0 {
		out = append(out, pt.S(pMuted, clip("  score plugins: "+strings.Join(names, ", "), w)))
	}
	return out
}

// shortPlugins are column labels for the upstream score plugins.
var shortPlugins = map[string]string{
	"NodeResourcesBalancedAllocation": "Balanced", "NodeResourcesFit": "Fit", "TaintToleration": "Taint",
	"NodeAffinity": "Affinity", "ImageLocality": "Image", "PodTopologySpread": "Spread",
	"InterPodAffinity": "InterPod", "VolumeBinding": "Volume",
}

// shortPlugin is a plugin's column label when full names do not fit.
func shortPlugin(p string) string {
	if s, ok := shortPlugins[p]; ok {
		return s
	}
	return abbrevPlugin(p, 8)
}

// abbrevPlugin shortens a plugin name to fit a column: NodeResourcesFit → NodeRes…
func abbrevPlugin(p string, w int) string {
	if len(p) <= w {
		return p
	}
	return p[:w-1] + "…"
}
