// Package handshake runs the hook's checks of a kernel scheduler's
// welcome (hook/lib/handshake.c, compiled in through cgo) from Go, so
// that a fuzz test can drive them with any welcome and any descriptors:
// the hook is C, loaded into jobs, and has no test harness of its own.
// mmkd does not use this package.
package handshake

/*
#cgo CFLAGS: -std=c11 -D_GNU_SOURCE -Wall -Werror
#include "../lib/handshake.c"
*/
import "C"

import (
	"errors"
	"unsafe"
)

// SlotBytes is the size of the hook's struct mmk_slot, the least shared
// memory a welcome may announce; SlotMax the most.
const (
	SlotBytes = int(C.sizeof_struct_mmk_slot)
	SlotMax   = int(C.MMK_SLOT_MAX)
	// WelcomeBytes is the size of struct mmk_welcome.
	WelcomeBytes = int(C.sizeof_struct_mmk_welcome)
)

// Welcome is a struct mmk_welcome as the C compiler lays it out, in
// bytes: what a server sends.
func Welcome(magic uint32, version, status uint16, slotBytes, ring uint32) []byte {
	w := C.struct_mmk_welcome{magic: C.uint32_t(magic), version: C.uint16_t(version), status: C.uint16_t(status),
		slot_bytes: C.uint32_t(slotBytes), ring: C.uint32_t(ring)}
	return C.GoBytes(unsafe.Pointer(&w), C.int(WelcomeBytes))
}

// Protocol values (hook/lib/proto.h).
const (
	Magic   = uint32(C.MMK_PROTO_MAGIC)
	Version = uint16(C.MMK_PROTO_VERSION)
	Ring    = uint32(C.MMK_RING)
)

// Check runs mmk_check_welcome on the welcome's bytes (at most
// WelcomeBytes are read; fewer are a short welcome) and the two
// descriptors: nil when the hook would map the memory, else its reason.
func Check(welcome []byte, memfd, wakefd int) error {
	var w C.struct_mmk_welcome
	n := min(len(welcome), WelcomeBytes)
	if n > 0 {
		C.memcpy(unsafe.Pointer(&w), unsafe.Pointer(&welcome[0]), C.size_t(n))
	}
	if why := C.mmk_check_welcome(&w, C.size_t(len(welcome)), C.int(memfd), C.int(wakefd)); why != nil {
		return errors.New(C.GoString(why))
	}
	return nil
}
