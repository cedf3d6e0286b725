package jobs

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	// Fields 23 on are cut; parseStat reads up to field 22.
	const rest = " 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0"
	for _, tc := range []struct {
		name  string
		data  string
		want  procStat
		fails bool
	}{
		{"plain", "17 (sh) S" + rest, procStat{State: 'S', PGID: 1, Flags: 4194560, StartTicks: 4242}, false},
		{"comm with spaces and parens", "17 (a) b (c) Z" + rest, procStat{State: 'Z', PGID: 1, Flags: 4194560, StartTicks: 4242}, false},
		{"exiting", "17 (sh) R 0 1 1 0 -1 4194564 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0", procStat{State: 'R', PGID: 1, Flags: 4194564, StartTicks: 4242}, false},
		{"bad flags", "17 (sh) S 0 1 1 0 -1 x 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0", procStat{}, true},
		{"no comm", "17 sh S" + rest, procStat{}, true},
		{"too few fields", "17 (sh) S 0 1", procStat{}, true},
		{"bad start time", "17 (sh) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 x", procStat{}, true},
		{"empty", "", procStat{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat([]byte(tc.data))
			if (err != nil) != tc.fails || got != tc.want {
				t.Fatalf("parseStat: %+v %v, want %+v (fails: %v)", got, err, tc.want, tc.fails)
			}
		})
	}
}

// TestProcStatEnded: a process exiting (PF_EXITING, its /proc entry still
// readable), a zombie and a dead one have ended; a running or sleeping
// one has not.
func TestProcStatEnded(t *testing.T) {
	for _, tc := range []struct {
		st   procStat
		want bool
	}{
		{procStat{State: 'S', Flags: 4194560}, false},
		{procStat{State: 'R', Flags: 4194564}, true},
		{procStat{State: 'Z'}, true},
		{procStat{State: 'X'}, true},
	} {
		if got := tc.st.ended(); got != tc.want {
			t.Errorf("%+v ended: %v, want %v", tc.st, got, tc.want)
		}
	}
}

func TestProcIdent(t *testing.T) {
	self, err := identify(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		id   procIdent
		want procCheck
	}{
		{"this process", self, procRunning},
		{"its pid, another start time", procIdent{PID: self.PID, StartTicks: self.StartTicks + 1, BootID: self.BootID}, procGone},
		{"its pid, another boot", procIdent{PID: self.PID, StartTicks: self.StartTicks, BootID: "another"}, procGone},
		{"no pid", procIdent{BootID: self.BootID}, procGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := tc.id.check(); err != nil || got != tc.want {
				t.Fatalf("check: %v %v, want %v", got, err, tc.want)
			}
		})
	}
}
