//go:build !linux

package redisretry

import "os/exec"

// dieWithParent does nothing where the kernel cannot end a child with its
// parent: the tests' cleanups stop the server.
func dieWithParent(*exec.Cmd) {}
