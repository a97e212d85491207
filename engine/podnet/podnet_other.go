//go:build !linux

package podnet

// Reexec answers ErrUnsupported: network namespaces are Linux's.
func Reexec(string) (int, error) { return 0, ErrUnsupported }

// Setup is a no-op outside Linux.
func Setup() error { return nil }

// AddRange answers ErrUnsupported outside Linux.
func AddRange(string) error { return ErrUnsupported }
