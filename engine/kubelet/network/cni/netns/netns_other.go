//go:build !linux

package netns

import (
	"errors"
	"runtime"
)

// errNotLinux answers every call: network namespaces are Linux's.
var errNotLinux = errors.New("network namespaces need Linux, not " + runtime.GOOS)

// Create fails: network namespaces need Linux.
func Create(string) (string, error) { return "", errNotLinux }

// Remove fails: network namespaces need Linux.
func Remove(string) error { return errNotLinux }

// Do fails without calling fn: network namespaces need Linux.
func Do(string, func() error) error { return errNotLinux }
