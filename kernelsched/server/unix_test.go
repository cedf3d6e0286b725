package server

import (
	"testing"

	"golang.org/x/sys/unix"
)

func mustEventfd(t *testing.T) int {
	t.Helper()
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func rights(fds ...int) []byte { return unix.UnixRights(fds...) }
