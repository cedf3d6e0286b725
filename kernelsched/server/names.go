package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"unsafe"
)

// Caps on what one task may make the server keep of its kernel names
// (protocol step 5): the hook numbers its names 1 to maxNameID and sends
// each once. A task whose names, kept or not, come to more than
// maxNameBytesSent is dropped (its hook runs its launches unscheduled).
// Of them the server keeps at most maxNameBytesTask, and what the task's
// job may keep (shares, maxNameBytes); names past that are read and
// dropped, their launches unprofiled, so that no client holds the
// server's memory.
const (
	maxNameID        = 8191    // the hook's NAME_IDS - 1
	maxNameBytesSent = 8 << 20 // all of one task's names, kept or not
	maxNameBytesTask = 1 << 20 // what the server keeps of one task's
)

var (
	errNoPeer      = errors.New("the connecting process cannot be named (no SO_PEERCRED)")
	errTooManyTask = errors.New("too many tasks connected")
	errJobShare    = errors.New("the job holds its share of the task slots")
)

// nameTable is one task's kernel names, by id, and their bytes.
type nameTable struct {
	mu    *sync.Mutex // the server's; guards names and bytes
	names map[uint32]string
	bytes int // of the names kept
	// sent is the bytes of every id's last name kept and of every name
	// not kept (the hook sends each id once: one not kept sent again
	// counts again).
	sent int
	// take, if set, asks the task's job for n more bytes to keep; give
	// gives them back.
	take func(n int) bool
	give func(n int)
}

// readNames reads name messages (struct mmk_name_msg and the name) until
// r ends (nil) or breaks a rule: an id outside 1..maxNameID, a name
// longer than maxNameLen, or more than maxNameBytesSent of names. It
// keeps the names that fit in maxNameBytesTask and the job's share.
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
		old, had := nt.names[id]
		nt.mu.Unlock()
		if nt.sent-len(old)+int(n) > maxNameBytesSent {
			return fmt.Errorf("kernel names take more than %d bytes", maxNameBytesSent)
		}
		nt.sent += int(n) - len(old)
		if had {
			// The id is named again: its old name goes first.
			nt.mu.Lock()
			delete(nt.names, id)
			nt.bytes -= len(old)
			nt.mu.Unlock()
			if nt.give != nil {
				nt.give(len(old))
			}
		}
		keep := nt.bytes+int(n) <= maxNameBytesTask && (nt.take == nil || nt.take(int(n)))
		if !keep {
			if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
				return fmt.Errorf("kernel name %d: %w", id, err)
			}
			continue
		}
		// One allocation per name, which the table keeps: the bytes are
		// not written after.
		var name string
		if n > 0 {
			b := make([]byte, n)
			if _, err := io.ReadFull(r, b); err != nil {
				if nt.give != nil {
					nt.give(int(n))
				}
				return fmt.Errorf("kernel name %d: %w", id, err)
			}
			name = unsafe.String(&b[0], n)
		}
		nt.mu.Lock()
		nt.bytes += len(name)
		nt.names[id] = name
		nt.mu.Unlock()
	}
}
