package handshake

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// descriptors makes the two descriptors a fuzz case sends: a memfd of
// size bytes with the seals asked for, and a wake-up of the kind asked
// for (0 eventfd, 1 a pipe, 2 a memfd, 3 none).
func descriptors(t *testing.T, size uint32, seals uint8, wake uint8) (mem, wk int) {
	t.Helper()
	mem, err := unix.MemfdCreate("fuzz", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(mem) })
	if err := unix.Ftruncate(mem, int64(size)); err != nil {
		t.Fatal(err)
	}
	var s int
	if seals&1 != 0 {
		s |= unix.F_SEAL_SHRINK
	}
	if seals&2 != 0 {
		s |= unix.F_SEAL_GROW
	}
	if s != 0 {
		if _, err := unix.FcntlInt(uintptr(mem), unix.F_ADD_SEALS, s); err != nil {
			t.Fatal(err)
		}
	}
	switch wake % 4 {
	case 0:
		wk, err = unix.Eventfd(0, unix.EFD_CLOEXEC)
	case 1:
		var p [2]int
		err = unix.Pipe2(p[:], unix.O_CLOEXEC)
		if err == nil {
			unix.Close(p[0])
			wk = p[1]
		}
	case 2:
		wk, err = unix.MemfdCreate("not-eventfd", unix.MFD_CLOEXEC)
	case 3:
		return mem, -1
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(wk) })
	return mem, wk
}

// FuzzHandshake drives the hook's welcome checks with any welcome bytes
// and descriptors: the hook accepts exactly what it can safely map (a
// whole welcome of this protocol, status 0 and ring 4096, announcing a
// slot of SlotBytes to SlotMax bytes, a memfd of exactly that size sealed
// against shrinking and growing, and an eventfd), and what it accepts
// cannot be cut short (ftruncate fails, the whole mapping reads).
func FuzzHandshake(f *testing.F) {
	good := Welcome(Magic, Version, 0, uint32(SlotBytes), Ring)
	f.Add(good, uint32(SlotBytes), uint8(3), uint8(0))
	f.Add(good, uint32(4096), uint8(3), uint8(0))
	f.Add(good, uint32(SlotBytes), uint8(0), uint8(0))
	f.Add(good, uint32(SlotBytes), uint8(3), uint8(1))
	f.Add(Welcome(Magic, 3, 0, uint32(SlotBytes), Ring), uint32(SlotBytes), uint8(3), uint8(0))
	f.Add(Welcome(Magic, Version, 2, uint32(SlotBytes), Ring), uint32(SlotBytes), uint8(3), uint8(0))
	f.Add(good[:10], uint32(SlotBytes), uint8(3), uint8(0))
	f.Add(Welcome(Magic, Version, 0, 1<<30, Ring), uint32(1<<30), uint8(3), uint8(0))
	f.Fuzz(func(t *testing.T, w []byte, size uint32, seals, wake uint8) {
		size %= uint32(2 * SlotMax)
		mem, wk := descriptors(t, size, seals, wake)
		err := Check(w, mem, wk)
		le := binary.LittleEndian
		want := len(w) == WelcomeBytes && le.Uint32(w) == Magic && le.Uint16(w[4:]) == Version && le.Uint16(w[6:]) == 0 &&
			le.Uint32(w[12:]) == Ring && int(le.Uint32(w[8:])) >= SlotBytes && int(le.Uint32(w[8:])) <= SlotMax &&
			le.Uint32(w[8:]) == size && seals&3 == 3 && wake%4 == 0
		if (err == nil) != want {
			t.Fatalf("welcome %x, memfd of %d bytes, seals %d, wake kind %d: Check = %v, want accepted %v", w, size, seals&3, wake%4, err, want)
		}
		if err != nil {
			return
		}
		if err := unix.Ftruncate(mem, 0); err == nil {
			t.Fatal("an accepted memory could be shrunk")
		}
		m, err := unix.Mmap(mem, 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		_ = m[len(m)-1] // would be SIGBUS past the file's end
		_ = unix.Munmap(m)
	})
}
