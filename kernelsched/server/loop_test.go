package server

import (
	"encoding/binary"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
)

// publish writes one launch into the slot as the hook does (ring entry,
// then its ready word).
func publish(s *slot, seq, tNs uint64, api uint32) {
	off := offRing + int((seq-1)%Ring)*entrySize
	le := binary.LittleEndian
	e := s.mem[off : off+entrySize]
	le.PutUint32(e[entNameID:], 0)
	le.PutUint64(e[entSeq:], seq)
	le.PutUint64(e[entTime:], tNs)
	for i := range 3 {
		le.PutUint32(e[entGrid+4*i:], 1)
		le.PutUint32(e[entBlock+4*i:], 1)
	}
	le.PutUint32(e[entBlock:], 128)
	le.PutUint32(e[entAPI:], api)
	atomic.StoreUint64(s.u64(offHead), seq)
	atomic.StoreUint32(s.u32(off+entReady), uint32(seq))
}

// TestArrivalTime: a held launch arrives at the hook's time stamp (never
// later than the loop's clock); one that went at once carries none and
// arrives when the loop reads it.
func TestArrivalTime(t *testing.T) {
	const now = 5 * time.Second
	tests := []struct {
		name string
		tNs  uint64
		api  uint32
		want time.Duration
	}{
		{"stamped by the hook", uint64(3 * time.Second), 0, 3 * time.Second},
		{"stamp after the loop's clock", uint64(7 * time.Second), 0, now},
		{"went at once, no stamp", 0, entryWent, now},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Config{Socket: "unused", Policy: "fifo", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			id, err := s.core.AddTask(kernelsched.TaskSpec{Name: "job", Priority: 5})
			if err != nil {
				t.Fatal(err)
			}
			sl, err := newSlot("job")
			if err != nil {
				t.Fatal(err)
			}
			defer sl.close()
			s.tasks[id] = &task{id: id, slot: sl, names: map[uint32]string{}, local: map[uint32]string{}}
			publish(sl, 1, tc.tNs, tc.api)
			if !s.drain(now) {
				t.Fatal("drain read nothing")
			}
			ct, err := s.core.Task(id)
			if err != nil {
				t.Fatal(err)
			}
			l, ok := ct.Head()
			if !ok {
				t.Fatal("no launch pending in the core")
			}
			if l.Arrived != tc.want {
				t.Errorf("arrived at %v, want %v", l.Arrived, tc.want)
			}
			if got, want := s.atOnce.Load(), uint64(tc.api>>31); got != want {
				t.Errorf("at-once count %d, want %d", got, want)
			}
		})
	}
}
