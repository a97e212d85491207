//go:build !linux

package containerd

import "errors"

func makeBridge(string, string) error { return errors.New("real containers need Linux") }

func deleteBridge(string) error { return nil }
