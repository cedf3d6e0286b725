package server

import (
	"encoding/binary"
	"fmt"
)

// Protocol constants and layouts; hook/lib/proto.h is the other side and
// TestLayoutMatchesC compiles it to check every offset here.
const (
	ProtoMagic   = 0x484b4d4d // "MMKH"
	ProtoVersion = 5
	Ring         = 4096

	helloSize   = 4 + 2 + 2 + 4*4 + 128 + 64
	welcomeSize = 4 + 2 + 2 + 4 + 4
	nameMsgSize = 8
	maxNameLen  = 1 << 16

	// struct mmk_slot
	offGranted        = 0
	offFree           = 4
	offServerSleeping = 8
	offQuiet          = 12
	offTPCKeep        = 16
	offHead           = 64
	offFailOpen       = 72
	offObserveEvery   = 80
	offQuietAck       = 84
	offTPCState       = 88
	offTail           = 128
	offRing           = 192
	entrySize         = 56
	slotBytes         = offRing + Ring*entrySize

	// struct mmk_entry
	entReady     = 0
	entNameID    = 4
	entSeq       = 8
	entTime      = 16
	entGrid      = 24
	entBlock     = 36
	entSharedMem = 48
	entAPI       = 52
)

// Hello is what a hook says when it connects.
type Hello struct {
	PID, Priority int
	Online        bool
	MPSPercent    int
	TaskKey, Name string
}

// parseHello decodes and checks a struct mmk_hello.
func parseHello(b []byte) (Hello, error) {
	if len(b) != helloSize {
		return Hello{}, fmt.Errorf("hello is %d bytes, want %d", len(b), helloSize)
	}
	le := binary.LittleEndian
	if m := le.Uint32(b); m != ProtoMagic {
		return Hello{}, fmt.Errorf("hello magic %#x, want %#x", m, ProtoMagic)
	}
	if v := le.Uint16(b[4:]); v != ProtoVersion {
		return Hello{}, fmt.Errorf("hook speaks protocol %d, this server %d", v, ProtoVersion)
	}
	if n := le.Uint16(b[6:]); n != helloSize {
		return Hello{}, fmt.Errorf("hello size field %d, want %d", n, helloSize)
	}
	h := Hello{
		PID:        int(int32(le.Uint32(b[8:]))),
		Priority:   int(int32(le.Uint32(b[12:]))),
		Online:     le.Uint32(b[16:]) != 0,
		MPSPercent: int(int32(le.Uint32(b[20:]))),
		TaskKey:    cString(b[24 : 24+128]),
		Name:       cString(b[152 : 152+64]),
	}
	return h, nil
}

// cString is the bytes before the first NUL.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// welcome encodes a struct mmk_welcome.
func welcome(status uint16) []byte {
	b := make([]byte, welcomeSize)
	le := binary.LittleEndian
	le.PutUint32(b, ProtoMagic)
	le.PutUint16(b[4:], ProtoVersion)
	le.PutUint16(b[6:], status)
	le.PutUint32(b[8:], slotBytes)
	le.PutUint32(b[12:], Ring)
	return b
}
