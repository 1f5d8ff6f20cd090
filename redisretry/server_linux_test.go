package redisretry

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes cmd's process end when the test binary's does, even
// when a test times out and its cleanups never run. (The kernel sends the
// signal when the thread that started the process ends; the Go runtime
// keeps its threads for the life of the process.)
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
