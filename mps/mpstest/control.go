// Package mpstest provides a stand-in for nvidia-cuda-mps-control for
// tests of packages that run MPS daemons (mps, node) on machines without
// a GPU.
package mpstest

import (
	"os"
	"path/filepath"
)

// fakeControl speaks nvidia-cuda-mps-control's protocol: -d starts the
// daemon (a file in its pipe directory marks it running); commands on
// stdin answer only while it runs; quit stops it; the default percentage
// and pinned-memory limit are remembered.
const fakeControl = `#!/bin/sh
state="$CUDA_MPS_PIPE_DIRECTORY/running"
if [ "$1" = "-d" ]; then touch "$state"; echo "started" >> "$CUDA_MPS_LOG_DIRECTORY/control.log"; exit 0; fi
read cmd
[ -f "$state" ] || { echo "Cannot find MPS control daemon process" >&2; exit 1; }
set -- $cmd
case "$1" in
get_server_list) echo 4242 ;;
quit) rm "$state" ;;
set_default_active_thread_percentage) echo "$2" > "$CUDA_MPS_PIPE_DIRECTORY/percent"; echo "$2" ;;
get_default_active_thread_percentage) cat "$CUDA_MPS_PIPE_DIRECTORY/percent" 2>/dev/null || echo 100 ;;
set_default_device_pinned_mem_limit) echo "$2 $3" > "$CUDA_MPS_PIPE_DIRECTORY/pinned" ;;
*) echo "unknown command $cmd" >&2; exit 1 ;;
esac
`

// WriteControl writes the fake control program into dir and returns its
// path.
func WriteControl(dir string) (string, error) {
	p := filepath.Join(dir, "nvidia-cuda-mps-control")
	return p, os.WriteFile(p, []byte(fakeControl), 0o755)
}
