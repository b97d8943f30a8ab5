package console_test

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the demo server end with the test process, even when
// that is killed (a go test timeout).
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
