package slo

import (
	"strings"
	"testing"
)

func TestTPCMapH100(t *testing.T) {
	m := H100TPCMap()
	if len(m.TPCs) != 62 || len(m.Holes) != 10 {
		t.Fatalf("%d TPCs, %d holes; want 62 and 10", len(m.TPCs), len(m.Holes))
	}
	tests := []struct {
		name        string
		keep, tpcs  int
		slots, took int
	}{
		{"every TPC kept: no mask", 66, 66, 0, 0},
		{"one off: the last slot", 65, 66, 71, 1},
		{"two off", 64, 66, 70, 2},
		{"7/8: eight off, slots 64-71", 58, 66, 64, 8},
		{"3/4: sixteen off, slots 56-71", 50, 66, 56, 16},
		{"1/2: 33 off, past four holes", 33, 66, 37, 33},
		{"more off than slots mask: all of them but slot 0", 1, 66, 1, 61},
		{"more kept than the part has: no mask", 70, 66, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := m.KeepSlots(tc.keep, tc.tpcs)
			if got != tc.slots {
				t.Fatalf("KeepSlots(%d, %d) = %d, want %d", tc.keep, tc.tpcs, got, tc.slots)
			}
			took := 0 // a count of 0 is no mask
			if got > 0 {
				took = 66 - m.Kept(got, 66)
			}
			if took != tc.took {
				t.Fatalf("slots %d.. take %d TPCs, want %d", got, took, tc.took)
			}
		})
	}
}

func TestTPCMapNilKeepsSlotsAsTPCs(t *testing.T) {
	var m *TPCMap
	for _, keep := range []int{1, 33, 58, 66} {
		if got := m.KeepSlots(keep, 66); got != keep {
			t.Errorf("no map: KeepSlots(%d) = %d, want %d", keep, got, keep)
		}
		if got := m.Kept(keep, 66); got != keep {
			t.Errorf("no map: Kept(%d) = %d, want %d", keep, got, keep)
		}
	}
}

func TestParseTPCMapErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"not JSON", `{`, "tpc map:"},
		{"no slots", `{"sms": 4, "tpcs": {}, "holes": []}`, "slots 0"},
		{"too many slots", `{"slots": 200, "sms": 4}`, "slots 200"},
		{"no SMs", `{"slots": 2, "sms": 0}`, "sms 0"},
		{"slot out of range", `{"slots": 2, "sms": 4, "tpcs": {"2": [0, 1]}, "holes": [0, 1]}`, "tpcs slot 2"},
		{"negative hole", `{"slots": 2, "sms": 4, "tpcs": {"0": [0, 1]}, "holes": [-1]}`, "holes slot -1"},
		{"slot twice", `{"slots": 2, "sms": 4, "tpcs": {"0": [0, 1]}, "holes": [0, 1]}`, "holes slot 0: listed twice"},
		{"SM twice", `{"slots": 2, "sms": 4, "tpcs": {"0": [0, 1], "1": [1, 2]}, "holes": []}`, "SM 1 is in another slot"},
		{"SM out of range", `{"slots": 1, "sms": 4, "tpcs": {"0": [4]}, "holes": []}`, "SM 4"},
		{"empty TPC", `{"slots": 1, "sms": 4, "tpcs": {"0": []}, "holes": []}`, "no SMs"},
		{"slot missing", `{"slots": 3, "sms": 4, "tpcs": {"0": [0, 1]}, "holes": [2]}`, "slot 1 is neither"},
		{"slot not a number", `{"slots": 1, "sms": 4, "tpcs": {"x": [0]}}`, "tpc map:"},
		{"no TPC at all", `{"slots": 2, "sms": 4, "tpcs": {}, "holes": [0, 1]}`, "no slot is a TPC"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTPCMap([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func FuzzParseTPCMap(f *testing.F) {
	f.Add(h100Map)
	f.Add([]byte(`{"slots": 2, "sms": 4, "tpcs": {"0": [0, 1]}, "holes": [1]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseTPCMap(b)
		if err != nil {
			return
		}
		for keep := 0; keep <= m.SMs/2+1; keep++ {
			s := m.KeepSlots(keep, m.SMs/2)
			if s < 0 || s > m.Slots {
				t.Fatalf("KeepSlots(%d) = %d outside 0..%d", keep, s, m.Slots)
			}
		}
	})
}

func TestKnownTPCMap(t *testing.T) {
	for _, tc := range []struct {
		name string
		sms  int
		want bool
	}{
		{"NVIDIA H100 80GB HBM3", 132, true},
		{"NVIDIA H100 80GB HBM3", 114, false},
		{"NVIDIA H200", 132, false},
		{"", 0, false},
	} {
		if got := KnownTPCMap(tc.name, tc.sms); (got != nil) != tc.want {
			t.Errorf("KnownTPCMap(%q, %d) = %v, want a map: %v", tc.name, tc.sms, got, tc.want)
		}
	}
}

// TestTPCsOf: two SMs a TPC, at least one; a mask keeps its rounded
// share of them, at least one.
func TestTPCsOf(t *testing.T) {
	for _, tc := range []struct{ sms, tpcs, keepQuarter int }{{132, 66, 17}, {16, 8, 2}, {1, 1, 1}, {0, 1, 1}} {
		if got := TPCsOf(tc.sms); got != tc.tpcs {
			t.Errorf("%d SMs: %d TPCs, want %d", tc.sms, got, tc.tpcs)
		}
		if got := KeptTPCs(0.25, TPCsOf(tc.sms)); got != tc.keepQuarter {
			t.Errorf("%d SMs: a quarter keeps %d TPCs, want %d", tc.sms, got, tc.keepQuarter)
		}
	}
}
