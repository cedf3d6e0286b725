package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Caps on what one task may make the server keep of its kernel names
// (protocol step 5): the hook numbers its names 1 to maxNameID and sends
// each once; a task past a cap is dropped (its hook runs its launches
// unscheduled), so that no client holds the server's memory.
const (
	maxNameID        = 8191    // the hook's NAME_IDS - 1
	maxNameBytesTask = 8 << 20 // all of one task's names
)

var (
	errNoPeer      = errors.New("the connecting process cannot be named (no SO_PEERCRED)")
	errTooManyTask = errors.New("too many tasks connected")
)

// nameTable is one task's kernel names, by id, and their bytes.
type nameTable struct {
	mu    *sync.Mutex // the server's
	names map[uint32]string
	bytes int
}

// readNames reads name messages (struct mmk_name_msg and the name) until
// r ends (nil) or breaks a rule: an id outside 1..maxNameID, a name
// longer than maxNameLen, or more than maxNameBytesTask of names.
func readNames(r io.Reader, nt *nameTable) error {
	hdr := make([]byte, nameMsgSize)
	for {
		if _, err := io.ReadFull(r, hdr); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("name message: %w", err)
		}
		id, n := binary.LittleEndian.Uint32(hdr), binary.LittleEndian.Uint32(hdr[4:])
		if id == 0 || id > maxNameID {
			return fmt.Errorf("kernel name id %d is outside 1..%d", id, maxNameID)
		}
		if n > maxNameLen {
			return fmt.Errorf("kernel name %d is %d bytes long, more than %d", id, n, maxNameLen)
		}
		nt.mu.Lock()
		grown := nt.bytes - len(nt.names[id]) + int(n)
		nt.mu.Unlock()
		if grown > maxNameBytesTask {
			return fmt.Errorf("kernel names take more than %d bytes", maxNameBytesTask)
		}
		name := make([]byte, n)
		if _, err := io.ReadFull(r, name); err != nil {
			return fmt.Errorf("kernel name %d: %w", id, err)
		}
		nt.mu.Lock()
		nt.bytes += len(name) - len(nt.names[id])
		nt.names[id] = string(name)
		nt.mu.Unlock()
	}
}
