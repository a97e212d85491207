package tuie2e

import (
	"flag"
	"os"
	"strconv"
	"testing"

	"github.com/podtrace/podtrace/internal/podtracebin"
)

// TestMain runs clustersAtOnce tests at once unless -parallel says
// otherwise (go test's default is one per core, but these tests mostly
// wait on a screen), and removes the podtrace binary the tests built once
// they have run.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(clustersAtOnce)); err != nil {
			panic(err)
		}
	}
	os.Exit(podtracebin.Removing(m).Run())
}
