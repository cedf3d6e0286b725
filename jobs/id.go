package jobs

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"time"
)

// idAlphabet is Crockford's base32 in lower case: no i, l, o, u.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// NewID returns a job id: 16 characters of base32 holding the time in
// milliseconds (48 bits) and 32 random bits, so that ids sort by creation
// time and two daemons never hand out the same one.
func NewID(now time.Time) string {
	var r [4]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails on Linux
	return encodeID(uint64(now.UnixMilli()), binary.BigEndian.Uint32(r[:]))
}

func encodeID(ms uint64, random uint32) string {
	// 80 bits: 48 of time, 32 random, 5 bits per character, big end first.
	hi := ms & (1<<48 - 1)
	var b strings.Builder
	b.Grow(16)
	for i := 15; i >= 0; i-- {
		shift := uint(i * 5)
		var v uint64
		if shift >= 32 {
			v = hi >> (shift - 32)
		} else {
			v = hi<<(32-shift) | uint64(random)>>shift
		}
		b.WriteByte(idAlphabet[v&31])
	}
	return b.String()
}

// ValidID reports a string that can be a job id: 16 characters of the
// id alphabet.
func ValidID(id string) bool {
	if len(id) != 16 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if strings.IndexByte(idAlphabet, id[i]) < 0 {
			return false
		}
	}
	return true
}
