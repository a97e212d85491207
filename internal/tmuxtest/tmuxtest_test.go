package tmuxtest

import (
	"strings"
	"testing"
	"time"
)

// TestScreenIsCapturePane reads a screen with UTF-8, colours and a line
// that looks like the end of a control-mode block through the control
// client, and wants what `tmux capture-pane -p` prints; once the session
// has ended, TryScreen says so instead of waiting.
func TestScreenIsCapturePane(t *testing.T) {
	Need(t)
	t.Parallel()
	tm := Start(t, 120, 20, nil, `printf '✓ │ ▾ \033[31mred\033[0m\n%%end 1 2 1\n'; read line`)
	want := tm.WaitFor("the text", 10*time.Second, Has("red", "%end 1 2 1"))
	for i := 0; i < 3; i++ {
		if exec := tm.Tmux("capture-pane", "-p", "-t", tm.Session); exec != want {
			t.Fatalf("control client:\n%q\ncapture-pane:\n%q", want, exec)
		}
		if again := tm.Screen(); again != want {
			t.Fatalf("read again:\n%q\nfirst:\n%q", again, want)
		}
	}
	if !strings.HasPrefix(want, "✓ │ ▾ red\n") {
		t.Fatalf("screen %q", want)
	}
	tm.Keys("Enter") // the script ends, and with it the session
	done := make(chan error, 1)
	go func() {
		var err error
		for deadline := time.Now().Add(10 * time.Second); err == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			_, err = tm.TryScreen()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the screen is still read after the session ended")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("TryScreen hangs after the session ended")
	}
}
