// Package testflags sets go test's flags for a package's TestMain.
package testflags

import (
	"flag"
	"strconv"
)

// DefaultParallel parses the test flags and lets n parallel tests run at
// once unless -test.parallel was given (go test's default is one per core;
// tests that mostly wait on clusters they started can run more).
func DefaultParallel(n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err)
		}
	}
}
