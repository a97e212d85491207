package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/podtrace/podtrace/stages"
)

// An owner's READY count stays readable in the STATUS column at 80 and 120
// columns, even for hundreds of pods.
func TestOwnerReadyCountFitsTheStatusColumn(t *testing.T) {
	var evs []stages.Event
	evs = append(evs, stages.Event{Time: t0, Kind: stages.KindDeployment, Namespace: "default", Pod: "load", Stage: stages.Persist, Status: stages.Succeeded},
		stages.Event{Time: t0, Kind: stages.KindReplicaSet, Namespace: "default", Pod: "load-5f6d8c7b9", Stage: stages.Reconcile, Status: stages.Succeeded})
	for i := 0; i < 200; i++ {
		pod := "load-5f6d8c7b9-" + itoa(10000+i)
		evs = append(evs, stages.Event{Time: t0, Namespace: "default", Pod: pod, Stage: stages.Reconcile, Status: stages.Succeeded})
		if i < 75 {
			evs = append(evs, stages.Event{Time: t0, Namespace: "default", Pod: pod, Stage: stages.Start, Status: stages.Succeeded},
				stages.Event{Time: t0, Namespace: "default", Pod: pod, Stage: stages.Ready, Status: stages.Succeeded})
		}
	}
	for _, w := range []int{80, 120, 200} {
		m := New(&FakeSource{}, Options{Now: func() time.Time { return t0 }})
		m.Update(tea.WindowSizeMsg{Width: w, Height: 30})
		m.Fold(evs...)
		s := ansi.Strip(m.Render())
		for _, owner := range []string{"deploy/load", "rs/load"} {
			line := ""
			for _, l := range strings.Split(s, "\n") {
				if strings.Contains(l, owner) {
					line = l
				}
			}
			if !strings.Contains(line, "75/200") || strings.Contains(line, "75/200 rea…") {
				t.Errorf("width %d: %s lane does not show 75/200 whole: %q", w, owner, line)
			}
		}
	}
}

// With the detail beside the lanes (160 columns and more), every lane and
// every stage selected still draws a frame of exactly the terminal's size:
// a longer line would wrap and scroll the screen.
func TestWideDetailFitsEverySelection(t *testing.T) {
	for _, size := range [][2]int{{160, 45}, {170, 50}, {200, 60}} {
		m, _, _ := fixture(size[0], size[1], "dark")
		for row := 0; row < len(m.store.Rows()); row++ {
			m.sel = row
			m.clampScroll()
			for st := range stages.Lifecycle {
				m.stage = st
				checkFrame(t, m.Render(), size[0], size[1])
			}
		}
	}
}
