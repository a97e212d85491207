package tuie2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/tmuxtest"
)

// TestScreenshot renders a real run for the README: podtrace at 200×38 with
// an image typo in back-off, a crash loop and a pod too big for any node,
// then the web Deployment caught while its pods pull their image. It writes
// the pane with its colours to $PODTRACE_SCREENSHOT.ans and, when aha and
// chromium are installed, the PNG to $PODTRACE_SCREENSHOT. It runs only
// when that variable is set:
//
//	PODTRACE_SCREENSHOT=$PWD/docs/screenshot.png go test ./e2e/tui -run Screenshot -v
func TestScreenshot(t *testing.T) {
	out := os.Getenv("PODTRACE_SCREENSHOT")
	if out == "" {
		t.Skip("set PODTRACE_SCREENSHOT=FILE.png to render the README screenshot")
	}
	tmuxtest.Need(t)
	const cols, rows = 200, 38
	tm := startTerm(t, cols, rows, podtracebin.Path(t), "--data-dir", t.TempDir())
	tm.WaitFor("3 Ready nodes", clusterStart, tmuxtest.Has("nodes 3/3 Ready"))
	for _, w := range []string{"typo", "crashloop", "too-big"} {
		applyWorkload(t, tm, w)
	}
	tm.WaitFor("a crash loop and an image pull back-off", 2*time.Minute, tmuxtest.Has("CrashLoopBackOff", "ImagePullBackOff"))
	applyWorkload(t, tm, "web")
	// Select a web pod at its pull stage: the detail on the right explains
	// the stage while its cell spins.
	for i := 0; i < 10; i++ {
		tm.Keys("l")
	}
	selectLane(t, tm, func(l string) bool { return strings.Contains(l, "web-") && !strings.Contains(l, "rs/") })
	tm.WaitFor("web pods pulling", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "Pulling image") && strings.Contains(selectedLane(s), "Container")
	})
	time.Sleep(1200 * time.Millisecond)
	ans := tm.ScreenANSI()
	if err := os.WriteFile(out+".ans", []byte(ans), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screen:\n%s", tm.Screen())
	if err := renderPNG(ans, out, cols, rows); err != nil {
		t.Fatalf("render %s: %v", out, err)
	}
}

// renderPNG turns the ANSI screen into HTML with aha and photographs it
// with headless chromium, cols×rows cells of DejaVu Sans Mono.
func renderPNG(ans, out string, cols, rows int) error {
	if _, err := exec.LookPath("aha"); err != nil {
		return fmt.Errorf("aha not installed (apt-get install aha): %w", err)
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		return fmt.Errorf("chromium not installed (apt-get install chromium): %w", err)
	}
	cmd := exec.Command("aha", "--no-header", "--black")
	cmd.Stdin = strings.NewReader(ans)
	body, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("aha: %w", err)
	}
	const fontPx, lineH, charW = 14, 17, 8.43 // DejaVu Sans Mono at 14px
	html := `<!DOCTYPE html><html><head><meta charset="utf-8"><style>
html,body{margin:0;background:#121212}
pre{margin:0;padding:10px 12px;font:` + fmt.Sprint(fontPx) + `px/` + fmt.Sprint(lineH) + `px 'DejaVu Sans Mono',monospace;color:#d0d0d0;background:#121212}
</style></head><body><pre>` + string(body) + `</pre></body></html>`
	dir, err := os.MkdirTemp("", "podtrace-shot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	page := filepath.Join(dir, "screen.html")
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		return err
	}
	w, h := int(float64(cols)*charW)+24, rows*lineH+20
	shot := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), fmt.Sprintf("--window-size=%d,%d", w, h),
		"--screenshot="+out, "file://"+page)
	if b, err := shot.CombinedOutput(); err != nil {
		return fmt.Errorf("chromium: %w\n%s", err, b)
	}
	return nil
}
