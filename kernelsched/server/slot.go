package server

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

const futexWake = 1 // FUTEX_WAKE

// slot is one task's shared memory (struct mmk_slot): a memfd both sides
// map.
type slot struct {
	fd  int
	mem []byte
}

// newSlot makes a task's shared memory: a memfd of slotBytes, sealed
// against shrinking and growing (and against further seals), which the
// hook checks before it maps it (hook/lib/handshake.c): whoever holds the
// descriptor can no longer cut the mapping short under the job.
func newSlot(name string) (*slot, error) {
	fd, err := unix.MemfdCreate("mmk-"+name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	if err := unix.Ftruncate(fd, slotBytes); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("memfd size: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("memfd seals: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, slotBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return &slot{fd: fd, mem: mem}, nil
}

func (s *slot) close() {
	if s.mem != nil {
		_ = unix.Munmap(s.mem)
		s.mem = nil
	}
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
}

func (s *slot) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&s.mem[off])) }
func (s *slot) u64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&s.mem[off])) }

func (s *slot) setFree(free bool) {
	v := uint32(0)
	if free {
		v = 1
	}
	atomic.StoreUint32(s.u32(offFree), v)
}

func (s *slot) setSleeping(on bool) {
	v := uint32(0)
	if on {
		v = 1
	}
	atomic.StoreUint32(s.u32(offServerSleeping), v)
}

// The quiet word's bits (proto.h, protocol steps 8 and 9).
const (
	quietBit   = 1 // the policy needs none of the task's launches
	quietMark  = 2 // while quiet, mark each request's start
	quietCount = 4 // the change count's unit
)

// The hook's word on TPC masks (tpc_state, protocol step 11).
const (
	// TPCMasking: the hook masks the task's kernels as asked.
	TPCMasking = 1
	// TPCNone: it cannot (no MMK_TPC_MASK=1 gives 0, not this).
	TPCNone = 2
	// TPCReady: it can, and has masked no kernel yet.
	TPCReady = 3
)

// setQuiet tells the hook whether the policy needs the task's launches
// (protocol step 8) and, while it does not, whether to mark requests
// (step 9): it writes the next quiet word (a count of changes above bit
// 1), wakes the hook's watcher thread, and returns the word, which the
// hook echoes once it has applied it.
func (s *slot) setQuiet(quiet, mark bool) uint32 {
	p := s.u32(offQuiet)
	v := (atomic.LoadUint32(p)/quietCount + 1) * quietCount
	if quiet {
		v |= quietBit
		if mark {
			v |= quietMark
		}
	}
	atomic.StoreUint32(p, v)
	wakeAll(p)
	return v
}

// setTPCKeep lets the task's kernels use only the first keep TPCs (0:
// all; protocol step 11).
func (s *slot) setTPCKeep(keep uint32) { atomic.StoreUint32(s.u32(offTPCKeep), keep) }

// tpcState is what the hook said of TPC masks: 0 nothing (not asked for),
// TPCReady, TPCMasking or TPCNone.
func (s *slot) tpcState() uint32 { return atomic.LoadUint32(s.u32(offTPCState)) }

// quietAck is the last quiet word the hook applied (protocol step 8).
func (s *slot) quietAck() uint32 { return atomic.LoadUint32(s.u32(offQuietAck)) }

// grant lets launches up to seq go and wakes the waiting hook threads.
func (s *slot) grant(seq uint64) {
	p := s.u32(offGranted)
	atomic.StoreUint32(p, uint32(seq))
	wakeAll(p)
}

// wakeAll wakes every hook thread waiting on the futex word p.
func wakeAll(p *uint32) {
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(p)), futexWake, math.MaxInt32, 0, 0, 0)
}

// entry is a published launch (struct mmk_entry).
type entry struct {
	seq         uint64
	nameID      uint32
	tNs         uint64
	grid, block [3]uint32
	sharedMem   uint32
	api         uint32
}

// unread returns the offset of the entry after tail and whether the hook
// published it.
func (s *slot) unread() (tail uint64, off int, ok bool) {
	tail = atomic.LoadUint64(s.u64(offTail))
	off = offRing + int(tail%Ring)*entrySize
	return tail, off, atomic.LoadUint32(s.u32(off+entReady)) == uint32(tail+1)
}

// next reads the entry after tail if the hook published it, and moves tail.
func (s *slot) next() (entry, bool) {
	tail, off, ok := s.unread()
	if !ok {
		return entry{}, false
	}
	le := binary.LittleEndian
	e := s.mem[off : off+entrySize]
	var out entry
	out.nameID = le.Uint32(e[entNameID:])
	out.seq = le.Uint64(e[entSeq:])
	out.tNs = le.Uint64(e[entTime:])
	for i := range 3 {
		out.grid[i] = le.Uint32(e[entGrid+4*i:])
		out.block[i] = le.Uint32(e[entBlock+4*i:])
	}
	out.sharedMem = le.Uint32(e[entSharedMem:])
	out.api = le.Uint32(e[entAPI:])
	atomic.StoreUint64(s.u64(offTail), tail+1)
	return out, true
}

// failOpens is the hook's count of launches it let go unscheduled.
func (s *slot) failOpens() uint64 { return atomic.LoadUint64(s.u64(offFailOpen)) }

// pending reports whether an entry waits to be read.
func (s *slot) pending() bool {
	_, _, ok := s.unread()
	return ok
}

// headSeen is the hook's last reserved sequence number.
func (s *slot) headSeen() uint64 { return atomic.LoadUint64(s.u64(offHead)) }

// observeEvery is what the hook said of observed completions (protocol
// step 7): it records an event every that many launches while the task is
// held; 0: never.
func (s *slot) observeEvery() uint32 { return atomic.LoadUint32(s.u32(offObserveEvery)) }
