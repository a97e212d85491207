package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui/lanes"
)

// resultMsg reports the outcome of a command sent to the Source.
type resultMsg struct {
	text string
	err  bool
}

// do runs f off the UI loop and reports ok or f's error.
func do(ok string, f func() error) tea.Cmd {
	return func() tea.Msg {
		if err := f(); err != nil {
			return resultMsg{text: err.Error(), err: true}
		}
		return resultMsg{text: ok}
	}
}

func note(text string, isErr bool) tea.Cmd {
	return func() tea.Msg { return resultMsg{text: text, err: isErr} }
}

// detailResult is a fetched PodDetail.
type detailResult struct {
	d   PodDetail
	err error
}

type detailMsg struct {
	key string
	res detailResult
}

// refreshDetail fetches the selected pod's stored object while the detail is
// shown: at once when force, else about once a second.
func (m *Model) refreshDetail(force bool) tea.Cmd {
	if m.screen != screenDetail && !m.wideDetail() {
		return nil
	}
	l := m.selected()
	if l == nil || l.Kind != stages.KindPod {
		return nil
	}
	now := m.c.Now()
	if !force && now.Sub(m.detailAt) < time.Second {
		return nil
	}
	m.detailAt = now
	src, key, ns, name := m.src, l.Key(), l.Namespace, l.Name
	return func() tea.Msg {
		d, err := src.PodDetail(ns, name)
		return detailMsg{key: key, res: detailResult{d: d, err: err}}
	}
}

// unavailable explains why a command cannot run on this Source.
func (m *Model) unavailable(what string) tea.Cmd {
	why := "not supported by " + m.src.Name()
	if ro := m.status.ReadOnly; ro != "" {
		why = ro
	}
	return note(what+" unavailable: "+why, true)
}

// command handles the keys that act on the Source.
func (m *Model) command(msg tea.KeyPressMsg) tea.Cmd {
	k := &m.c.Keys
	l := m.selected()
	switch {
	case key.Matches(msg, k.Apply):
		if m.status.ReadOnly != "" {
			return m.unavailable("apply")
		}
		m.overlay = newApplyPicker(m.src.Workloads())
	case key.Matches(msg, k.Delete):
		if l == nil || l.Kind != stages.KindPod {
			return note("select a pod to delete", true)
		}
		if m.status.ReadOnly != "" {
			return m.unavailable("delete")
		}
		ns, name := l.Namespace, l.Name
		m.overlay = &confirm{question: fmt.Sprintf("Delete pod %s/%s?", ns, name),
			yes: do("deleting pod "+ns+"/"+name, func() error { return m.src.DeletePod(ns, name) }),
			no:  note("delete cancelled", false)}
	case key.Matches(msg, k.Scale):
		return m.scale(l)
	case key.Matches(msg, k.Fault):
		fc := m.src.Faults()
		if fc == nil {
			return m.unavailable("faults")
		}
		m.overlay = newFaultMenu(fc, m.selectedStage(), l)
	case key.Matches(msg, k.Breakpoint), key.Matches(msg, k.BreakAll):
		fc := m.src.Faults()
		if fc == nil {
			return m.unavailable("breakpoints")
		}
		bp := stages.Breakpoint{Stage: m.selectedStage()}
		if key.Matches(msg, k.Breakpoint) && l != nil && l.Kind == stages.KindPod {
			bp.Scope.Pod = l.Namespace + "/" + l.Name
		}
		return toggleBreakpoint(fc, bp)
	case key.Matches(msg, k.Step), key.Matches(msg, k.Continue), msg.String() == "C":
		fc := m.src.Faults()
		if fc == nil {
			return m.unavailable("stepping")
		}
		if msg.String() == "C" {
			return do("continued every held pod", func() error { return fc.Continue("") })
		}
		if l == nil || l.Kind != stages.KindPod {
			return note("select a pod held at a breakpoint", true)
		}
		pod := l.Namespace + "/" + l.Name
		if key.Matches(msg, k.Step) {
			return do("stepped "+pod, func() error { return fc.Step(pod) })
		}
		return do("continued "+pod, func() error { return fc.Continue(pod) })
	case key.Matches(msg, k.Pause), key.Matches(msg, k.Faster), key.Matches(msg, k.Slower), key.Matches(msg, k.FastForward):
		return m.clockKey(msg)
	}
	return nil
}

func toggleBreakpoint(fc FaultControl, bp stages.Breakpoint) tea.Cmd {
	for _, have := range fc.Breakpoints() {
		if have == bp {
			return do("breakpoint cleared before "+string(bp.Stage)+" for "+bp.Scope.String(),
				func() error { return fc.ClearBreakpoint(bp) })
		}
	}
	return do("breakpoint set before "+string(bp.Stage)+" for "+bp.Scope.String(),
		func() error { return fc.SetBreakpoint(bp) })
}

func (m *Model) scale(l *lanes.Lane) tea.Cmd {
	if l == nil {
		return note("select a pod or its owner to scale", true)
	}
	if m.status.ReadOnly != "" {
		return m.unavailable("scale")
	}
	// Scale the top owner: the Deployment when there is one, else the ReplicaSet.
	target := l
	for target.Owner != "" {
		o := m.store.Get(target.Owner)
		if o == nil {
			break
		}
		target = o
	}
	if target.Kind == stages.KindPod {
		return note("pod "+l.Name+" has no owner to scale", true)
	}
	ns, kind, name := target.Namespace, target.Kind, target.Name
	m.overlay = newPrompt(fmt.Sprintf("Scale %s/%s (%d pods now) to replicas: ", strings.ToLower(kind), name, target.Pods), "", func(v string) tea.Cmd {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return note(fmt.Sprintf("replicas %q: want a number ≥ 0", v), true)
		}
		return do(fmt.Sprintf("scaling %s %s to %d", strings.ToLower(kind), name, n),
			func() error { return m.src.Scale(ns, kind, name, n) })
	})
	return m.overlay.(*prompt).input.Focus()
}

func (m *Model) clockKey(msg tea.KeyPressMsg) tea.Cmd {
	k := &m.c.Keys
	ck := m.src.Clock()
	if ck == nil {
		return m.unavailable("pause and speed")
	}
	switch {
	case key.Matches(msg, k.Pause):
		p := !ck.Paused()
		m.paused = p
		word := "resumed"
		if p {
			word = "paused"
		}
		return do(word, func() error { return ck.SetPaused(p) })
	case key.Matches(msg, k.Faster), key.Matches(msg, k.Slower):
		s := ck.Speed()
		if s <= 0 {
			s = 1
		}
		if key.Matches(msg, k.Faster) {
			s = min(s*2, 1024)
		} else {
			s = max(s/2, 1.0/16)
		}
		m.speed = s
		return do("speed "+fmtSpeed(s), func() error { return ck.SetSpeed(s) })
	case key.Matches(msg, k.FastForward):
		return func() tea.Msg {
			ran, err := ck.FastForward()
			if err != nil {
				return resultMsg{text: err.Error(), err: true}
			}
			return resultMsg{text: "fast-forwarded: " + ran}
		}
	}
	return nil
}
