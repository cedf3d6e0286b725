package slo

import (
	"fmt"
	"slices"
)

// MapFromProbes builds a GPU's TPC slot map from probe runs of one kernel
// spread over every SM (mmk-tpcprobe; bench/gpu/tpcmap.py by hand): all
// is the SMs it ran on unmasked, off[s] those it ran on with slot s alone
// masked, for each of the descriptor's len(off) slots. A slot whose mask
// took SMs away is a TPC, those SMs its own; one that took none is a
// hole. It refuses runs that cannot give a map: an unmasked run on fewer
// SMs than the GPU has (another share of it, as under MPS), a masked run
// on an SM the unmasked one did not use, an SM two slots took, and runs
// where no mask took any SM (the hook masked nothing).
func MapFromProbes(gpu, uuid string, sms int, all []int, off [][]int) (*TPCMap, error) {
	every := make([]bool, max(sms, 0))
	for _, sm := range all {
		if sm < 0 || sm >= sms {
			return nil, fmt.Errorf("tpc map of %s: the unmasked kernel ran on SM %d of a GPU of %d", uuid, sm, sms)
		}
		every[sm] = true
	}
	if n := count(every); n != sms {
		return nil, fmt.Errorf("tpc map of %s: the unmasked kernel ran on %d of its %d SMs (a share of the GPU, as under MPS, cannot be mapped)", uuid, n, sms)
	}
	m := &TPCMap{GPU: gpu, UUID: uuid, Slots: len(off), SMs: sms, TPCs: map[int][]int{}}
	for s, seen := range off {
		got := make([]bool, sms)
		for _, sm := range seen {
			if sm < 0 || sm >= sms {
				return nil, fmt.Errorf("tpc map of %s: slot %d masked: the kernel ran on SM %d of a GPU of %d", uuid, s, sm, sms)
			}
			got[sm] = true
		}
		var gone []int
		for sm := range every {
			if !got[sm] {
				gone = append(gone, sm)
			}
		}
		if len(gone) == 0 {
			m.Holes = append(m.Holes, s)
			continue
		}
		m.TPCs[s] = gone
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("tpc map of %s: %w", uuid, err)
	}
	return m, nil
}

// count is how many of v are true.
func count(v []bool) int {
	n := 0
	for _, b := range v {
		if b {
			n++
		}
	}
	return n
}

// CheckKeep checks a probe run whose kernels kept the first slots
// (MMK_TPC_KEEP=slots, the count the kernel scheduler writes) against
// the map: it must have run on exactly the SMs the map leaves (every SM
// but those of the TPC slots from slots on). An error says how many SMs
// the mask should have taken and how many it did.
func (m *TPCMap) CheckKeep(slots int, seen []int) error {
	want := make([]bool, m.SMs)
	for i := range want {
		want[i] = true
	}
	for s, sms := range m.TPCs {
		if s >= slots {
			for _, sm := range sms {
				want[sm] = false
			}
		}
	}
	got := make([]bool, m.SMs)
	for _, sm := range seen {
		if sm < 0 || sm >= m.SMs {
			return fmt.Errorf("a mask keeping %d slots: the kernel ran on SM %d of a GPU of %d", slots, sm, m.SMs)
		}
		got[sm] = true
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("a mask keeping %d slots should leave %d of %d SMs; the kernel ran on %d", slots, count(want), m.SMs, count(got))
	}
	return nil
}
