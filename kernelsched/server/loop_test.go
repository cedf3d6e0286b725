package server

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/kernelsched"
	"github.com/mmkgpu/mmk/slo"
)

// oneTaskServer is a fifo server, not serving, with one task of priority
// 5 on a fresh slot; free says whether its launches go at once.
func oneTaskServer(t *testing.T, free bool) (*Server, kernelsched.TaskID, *slot) {
	t.Helper()
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
	t.Cleanup(sl.close)
	s.tasks[id] = &task{id: id, slot: sl, names: map[uint32]string{}, local: map[uint32]string{}, free: free}
	return s, id, sl
}

// TestWentWhileHeld: a launch a held task's hook let go without a grant
// (fail-open) is booked as released, not queued behind the task's held
// launches; a held launch after it is queued as usual.
func TestWentWhileHeld(t *testing.T) {
	s, id, sl := oneTaskServer(t, false)
	publish(sl, 1, uint64(time.Second), entryWent)
	publish(sl, 2, uint64(time.Second), 0)
	s.drain(2 * time.Second)
	ct, err := s.core.Task(id)
	if err != nil {
		t.Fatal(err)
	}
	if ct.Outstanding() != 1 || ct.Pending() != 1 {
		t.Errorf("%d outstanding, %d held; want 1 and 1", ct.Outstanding(), ct.Pending())
	}
	c := s.Counters()
	if c.Went != 1 || c.Kernels != 2 || c.AtOnce != 0 {
		t.Errorf("counters %+v: want went 1, kernels 2, at once 0", c)
	}
	if len(s.tasks[id].ringSeq) != 1 || s.tasks[id].ringSeq[0] != 2 {
		t.Errorf("held ring seqs %v, want [2]", s.tasks[id].ringSeq)
	}
}

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
			// A launch that went at once comes from a task the server lets go.
			s, id, sl := oneTaskServer(t, tc.api == entryWent)
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

// TestSyncHoldsCompletions: a high-priority task's kernel is done, by its
// predicted duration, at once; but while the task is inside a
// synchronisation the GPU is still running it (it may queue behind other
// tasks' kernels), so fikit holds the low-priority launch until the
// synchronisation returns. Without the synchronisation entries the launch
// goes as soon as the prediction says the GPU is free.
func TestSyncHoldsCompletions(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name        string
		sync        bool
		grantedAt5  bool
		grantedAt6  bool
		hpBusyAfter bool
	}{
		{"inside a synchronisation", true, false, true, false},
		{"no synchronisation reported", false, true, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Config{Socket: "unused", Policy: "fikit", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			add := func(name string, prio int, online bool) *task {
				sl, err := newSlot(name)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(sl.close)
				tk := &task{hello: Hello{Name: name, Priority: prio, Online: online}, slot: sl,
					names: map[uint32]string{}, local: map[uint32]string{}, ready: make(chan bool, 1)}
				s.events = append(s.events, event{add: tk})
				s.applyEvents()
				return tk
			}
			hp := add("hp", 0, true)
			lp := add("lp", 5, false)
			if !hp.free || lp.free {
				t.Fatalf("free: hp %v lp %v, want true false", hp.free, lp.free)
			}
			step := func(now time.Duration) {
				s.drain(now)
				s.completeDue(now)
				released, _ := s.core.Schedule(now)
				for _, l := range released {
					s.granted(l, now)
				}
			}
			grantedLP := func() bool { return atomic.LoadUint32(lp.slot.u32(offGranted)) >= 1 }
			hpSeq := uint64(1)
			publish(hp.slot, hpSeq, 0, entryWent)
			if tc.sync {
				hpSeq++
				publishSync(hp.slot, hpSeq, uint64(ms(1)), entrySyncEnter)
			}
			step(ms(1))
			publish(lp.slot, 1, uint64(ms(2)), 0)
			step(ms(5))
			if got := grantedLP(); got != tc.grantedAt5 {
				t.Errorf("at 5 ms the low-priority launch granted: %v, want %v", got, tc.grantedAt5)
			}
			s.publish()
			held := 0
			if !tc.grantedAt5 {
				held = 1
			}
			if q := s.Queues(); q[5] != held || q[0] != 0 {
				t.Errorf("queues %v: want %d held at priority 5", q, held)
			}
			if ts := s.Tasks(); len(ts) != 2 || ts[0].Held+ts[1].Held != held {
				t.Errorf("tasks %+v", ts)
			}
			if tc.sync {
				hpSeq++
				publishSync(hp.slot, hpSeq, uint64(ms(6)), entrySyncExit)
			}
			step(ms(6))
			if got := grantedLP(); got != tc.grantedAt6 {
				t.Errorf("at 6 ms the low-priority launch granted: %v, want %v", got, tc.grantedAt6)
			}
			var names []string
			for _, sp := range s.Timeline() {
				names = append(names, sp.Task)
				if sp.End.Before(sp.Start) || sp.Kernels < 1 {
					t.Errorf("span %+v", sp)
				}
			}
			if !slices.Contains(names, "hp") || !slices.Contains(names, "lp") {
				t.Errorf("timeline tasks %v, want hp and lp", names)
			}
			ct, err := s.core.Task(hp.id)
			if err != nil {
				t.Fatal(err)
			}
			if ct.Busy() != tc.hpBusyAfter || hp.syncing != 0 {
				t.Errorf("hp busy %v syncing %d after the synchronisation, want %v and 0", ct.Busy(), hp.syncing, tc.hpBusyAfter)
			}
		})
	}
}

// publishSync writes a synchronisation entry as the hook does.
func publishSync(s *slot, seq, tNs uint64, api uint32) {
	publish(s, seq, tNs, api)
	off := offRing + int((seq-1)%Ring)*entrySize
	for i := range 3 {
		binary.LittleEndian.PutUint32(s.mem[off+entGrid+4*i:], 0)
		binary.LittleEndian.PutUint32(s.mem[off+entBlock+4*i:], 0)
	}
}

// TestImplausibleReports: a reported request that ends before it starts,
// starts before its task connected (start 0 read as a request of 34
// minutes, issue 54) or lasts longer than any bound may is dropped and
// counted, not measured; a plausible one is measured.
func TestImplausibleReports(t *testing.T) {
	const connected = 2 * time.Hour
	report := func(start, end time.Duration) entry {
		return entry{api: entryRequest, tNs: uint64(end), grid: [3]uint32{uint32(uint64(start)), uint32(uint64(start) >> 32)}}
	}
	for _, tc := range []struct {
		name       string
		start, end time.Duration
		measured   bool
		work       time.Duration // a mark of the task's GPU work at (0: none)
		alone      bool          // counted uncorroborated, not bad
	}{
		{"plausible", connected + time.Second, connected + time.Second + 20*time.Millisecond, true, connected + time.Second + time.Millisecond, false},
		{"no GPU work in it", connected + time.Second, connected + time.Second + 20*time.Millisecond, false, 0, true},
		{"GPU work before it only", connected + time.Second, connected + time.Second + 20*time.Millisecond, false, connected + time.Second - time.Millisecond, true},
		{"ends before it starts", connected + time.Second, connected + time.Second - 1, false, 0, false},
		{"starts at 0", 0, connected + time.Second, false, 0, false},
		{"starts before the task connected", connected - time.Millisecond, connected + time.Millisecond, false, 0, false},
		{"longer than any bound", connected + time.Second, connected + time.Second + slo.MaxBound + 1, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, id, _ := oneTaskServer(t, true)
			tk := s.tasks[id]
			tk.since = connected
			now := connected + 3*time.Hour
			if tc.work != 0 {
				s.arrive(tk, entry{api: entryMark, tNs: uint64(tc.work)}, now)
			}
			s.arrive(tk, report(tc.start, tc.end), now)
			s.arrive(tk, report(tc.start, tc.end), now)
			c := s.Counters()
			want := [3]uint64{0, 2, 0}
			switch {
			case tc.measured:
				want = [3]uint64{2, 0, 0}
			case tc.alone:
				want = [3]uint64{0, 0, 2}
			}
			if got := [3]uint64{c.Requests, c.BadReports, c.Uncorroborated}; got != want {
				t.Errorf("requests, bad, uncorroborated reports = %v, want %v", got, want)
			}
		})
	}
}

// TestReportRate (issue 54, item 7): a task reports at most
// MaxReportRate requests a second (a burst of as many); past it reports
// are dropped and counted, and the budget comes back with time.
func TestReportRate(t *testing.T) {
	s, id, _ := oneTaskServer(t, true)
	tk := s.tasks[id]
	now := 10 * time.Second
	tk.since = now - time.Second
	report := entry{api: entryRequest, tNs: uint64(now - time.Millisecond), grid: [3]uint32{uint32(uint64(now - 2*time.Millisecond)), uint32(uint64(now-2*time.Millisecond) >> 32)}}
	s.arrive(tk, entry{api: entryMark, tNs: uint64(now - 2*time.Millisecond)}, now)
	flood := 3 * MaxReportRate
	for range flood {
		s.arrive(tk, report, now)
	}
	c := s.Counters()
	if c.Requests != MaxReportRate || c.ReportsLimited != uint64(flood-MaxReportRate) {
		t.Errorf("a flood of %d at once: %d measured, %d limited; want %d and %d", flood, c.Requests, c.ReportsLimited, MaxReportRate, flood-MaxReportRate)
	}
	// A tenth of a second later a tenth of the rate is back.
	for range MaxReportRate {
		s.arrive(tk, report, now+100*time.Millisecond)
	}
	if got := s.Counters().Requests - c.Requests; got != MaxReportRate/10 {
		t.Errorf("%d measured 100 ms later, want %d", got, MaxReportRate/10)
	}
}

// TestProfileErrorSaidOnce: a profile in the directory that cannot be
// read is said once (the loop looks for it every second; a round's log
// held 100 lines of one error), again when the error changes, and the
// profile is taken once it can be read.
func TestProfileErrorSaidOnce(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	s, err := New(Config{Socket: "unused", Policy: "fifo", ProfileDir: dir, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	path, err := kernelsched.ProfilePath(dir, "job")
	if err != nil {
		t.Fatal(err)
	}
	write := func(data string) {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	said := func() int { return strings.Count(logs.String(), "kernel scheduler: profile (said again") }
	write("not a profile")
	for range 5 {
		if s.profile("job") != nil {
			t.Fatal("a profile from a file that is not one")
		}
	}
	if n := said(); n != 1 {
		t.Errorf("said %d times over 5 looks, want once:\n%s", n, logs.String())
	}
	write(`{"format":"another"}`)
	s.profile("job")
	s.profile("job")
	if n := said(); n != 2 {
		t.Errorf("said %d times after the error changed, want 2", n)
	}
	var buf bytes.Buffer
	if err := kernelsched.WriteProfiles(&buf, []*kernelsched.TaskProfile{{Key: "job", Runs: 1}}); err != nil {
		t.Fatal(err)
	}
	write(buf.String())
	if p := s.profile("job"); p == nil || p.Key != "job" {
		t.Errorf("profile %+v once readable, want job's", p)
	}
}
