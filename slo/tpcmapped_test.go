package slo

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// die runs the probe's kernel on a GPU laid out as m: every SM but those
// of the TPC slots masked (what the hook and the GPU do).
func die(m *TPCMap, masked func(slot int) bool) []int {
	gone := map[int]bool{}
	for s, sms := range m.TPCs {
		if masked(s) {
			for _, sm := range sms {
				gone[sm] = true
			}
		}
	}
	var out []int
	for sm := range m.SMs {
		if !gone[sm] {
			out = append(out, sm)
		}
	}
	return out
}

func TestMapFromProbes(t *testing.T) {
	h := H100TPCMap()
	all := die(h, func(int) bool { return false })
	probes := func(m *TPCMap) [][]int {
		off := make([][]int, m.Slots)
		for s := range off {
			off[s] = die(m, func(x int) bool { return x == s })
		}
		return off
	}
	t.Run("the H100's probes give its map back", func(t *testing.T) {
		m, err := MapFromProbes(h.GPU, h.UUID, h.SMs, all, probes(h))
		if err != nil {
			t.Fatal(err)
		}
		if !maps.EqualFunc(m.TPCs, h.TPCs, slices.Equal) || !slices.Equal(m.Holes, h.Holes) || m.Slots != 72 {
			t.Fatalf("map differs: %d TPCs, holes %v; want %d, %v", len(m.TPCs), m.Holes, len(h.TPCs), h.Holes)
		}
	})
	bad := []struct {
		name string
		sms  int
		all  []int
		off  func() [][]int
		want string
	}{
		{"a share of the GPU", h.SMs, all[:100], func() [][]int { return probes(h) }, "ran on 100 of its 132 SMs"},
		{"an SM past the GPU's", h.SMs, append(slices.Clone(all), 132), func() [][]int { return probes(h) }, "SM 132"},
		{"no mask took anything (the hook masked nothing)", h.SMs, all, func() [][]int {
			off := make([][]int, 72)
			for s := range off {
				off[s] = all
			}
			return off
		}, "no slot is a TPC"},
		{"two slots took one SM", h.SMs, all, func() [][]int {
			off := probes(h)
			off[4] = off[0] // a hole that took slot 0's SMs too
			return off
		}, "in another slot too"},
		{"a masked run on an SM out of range", h.SMs, all, func() [][]int {
			off := probes(h)
			off[3] = append(off[3], 500)
			return off
		}, "slot 3 masked"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := MapFromProbes(h.GPU, h.UUID, tc.sms, tc.all, tc.off())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestCheckKeep(t *testing.T) {
	h := H100TPCMap()
	half := h.KeepSlots(KeptTPCs(0.5, 66), 66)
	tests := []struct {
		name string
		seen []int
		want string // "" : passes
	}{
		{"the mask took what the map says", die(h, func(s int) bool { return s >= half }), ""},
		{"the mask took nothing", die(h, func(int) bool { return false }), "the kernel ran on 132"},
		{"the first slots taken for TPCs (another die)", die(h, func(s int) bool { return s >= half-2 }), "should leave"},
		{"an SM out of range", []int{0, 400}, "SM 400"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := h.CheckKeep(half, tc.seen)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
