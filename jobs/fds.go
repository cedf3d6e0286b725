package jobs

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeOnExec marks every descriptor above stderr close-on-exec, so that
// what the shim inherited from mmkd (and mmkd from whatever started it:
// a service manager, a shell, a test) reaches no job, whatever user the
// job runs as. Go opens its own descriptors close-on-exec already; the
// job's stdout and stderr are dup2'ed into 1 and 2 by os/exec. It uses
// close_range(2) (Linux 5.11), else walks /proc/self/fd.
func closeOnExec() error {
	err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("close_range: %w", err)
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("inherited descriptors: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// The directory's own descriptor is closed by now: EBADF.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("descriptor %d: close-on-exec: %w", fd, err)
		}
	}
	return nil
}
