package slo

import (
	_ "embed" // the H100's measured map
	"encoding/json"
	"fmt"
	"slices"
)

//go:embed tpcmap-h100.json
var h100Map []byte

// H100TPCMap is the map bench/gpu/tpcmap.py took of an H100 80GB HBM3
// (driver 580, 2026-11-27; the same, slot for slot and SM for SM, on
// three GPUs): the layout the simulator gives a 132-SM GPU, and mmkd's
// for such a GPU without a map of its own (KnownTPCMap). A fresh copy
// each call.
func H100TPCMap() *TPCMap {
	m, err := ParseTPCMap(h100Map)
	if err != nil {
		panic("slo: the embedded H100 TPC map: " + err.Error()) // a build defect, caught by TestTPCMapH100
	}
	return m
}

// TPCMap is which of one GPU's TPC mask slots are TPCs a mask takes away.
// A kernel descriptor's mask numbers more slots than the part has TPCs
// (72 on Hopper, where an H100 has 66), and which slots are holes may
// differ between products and dies (five H100s had the same map, slot
// for slot and SM for SM). Measured on an
// H100 (bench/gpu/tpcmap.py, docs/results/slo-h100-tpcmap.md): ten holes,
// five of them in the first GPC's nine slots, and four TPCs (eight SMs)
// that no slot masked, so the first N slots kept N-6 to N+4 TPCs.
// With a map a rung keeps the share of the TPCs it names: the slots it
// masks are the last maskable ones.
type TPCMap struct {
	// GPU and UUID name the GPU the map was taken on.
	GPU  string `json:"gpu,omitempty"`
	UUID string `json:"uuid,omitempty"`
	// Slots is how many slots the descriptor's mask numbers; SMs the
	// GPU's SM count.
	Slots int `json:"slots"`
	SMs   int `json:"sms"`
	// TPCs are the slots that are TPCs, each with the SM ids a mask of it
	// alone took away; Holes the slots whose mask took none.
	TPCs  map[int][]int `json:"tpcs"`
	Holes []int         `json:"holes"`
}

// KnownTPCMap is the map of a GPU of this product name and SM count
// where one was measured on others of it (nil: none): the H100 80GB
// HBM3's. The slots a product's dies use were the same on every one
// measured; on a die that differed a rung would mask another count of
// TPCs than it names (fewer where its holes fall among the slots masked,
// more where the map's holes there are its TPCs).
func KnownTPCMap(name string, sms int) *TPCMap {
	m := H100TPCMap()
	if name != m.GPU || sms != m.SMs {
		return nil
	}
	return m
}

// ParseTPCMap reads a map as bench/gpu/tpcmap.py writes it. Every slot
// below Slots is a TPC or a hole, once; no SM is in two TPCs.
func ParseTPCMap(b []byte) (*TPCMap, error) {
	var m TPCMap
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("tpc map: %w", err)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("tpc map: %w", err)
	}
	return &m, nil
}

// validate checks what ParseTPCMap says of a map.
func (m *TPCMap) validate() error {
	if m.Slots < 1 || m.Slots > 128 {
		return fmt.Errorf("slots %d: want 1..128", m.Slots)
	}
	if m.SMs < 2 || m.SMs > 4096 {
		return fmt.Errorf("sms %d: want 2..4096", m.SMs)
	}
	seen := make([]bool, m.Slots)
	mark := func(what string, s int) error {
		if s < 0 || s >= m.Slots {
			return fmt.Errorf("%s slot %d: want 0..%d", what, s, m.Slots-1)
		}
		if seen[s] {
			return fmt.Errorf("%s slot %d: listed twice", what, s)
		}
		seen[s] = true
		return nil
	}
	sms := make([]bool, m.SMs)
	for _, s := range m.sortedTPCs() {
		if err := mark("tpcs", s); err != nil {
			return err
		}
		if len(m.TPCs[s]) == 0 {
			return fmt.Errorf("tpcs slot %d: no SMs (a slot that takes none is a hole)", s)
		}
		for _, sm := range m.TPCs[s] {
			if sm < 0 || sm >= m.SMs {
				return fmt.Errorf("tpcs slot %d: SM %d: want 0..%d", s, sm, m.SMs-1)
			}
			if sms[sm] {
				return fmt.Errorf("tpcs slot %d: SM %d is in another slot too", s, sm)
			}
			sms[sm] = true
		}
	}
	for _, s := range m.Holes {
		if err := mark("holes", s); err != nil {
			return err
		}
	}
	if i := slices.Index(seen, false); i >= 0 {
		return fmt.Errorf("slot %d is neither in tpcs nor in holes", i)
	}
	if len(m.TPCs) == 0 {
		return fmt.Errorf("no slot is a TPC (a map taken where the hook masked nothing)")
	}
	return nil
}

// sortedTPCs is the slots that are TPCs, ascending.
func (m *TPCMap) sortedTPCs() []int {
	out := make([]int, 0, len(m.TPCs))
	for s := range m.TPCs {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// KeepSlots is the slot count a mask keeping keep of an instance's tpcs
// TPCs writes (the hook masks the slots from it on; the kernel
// scheduler's keep count, 0: no mask): with no map, keep itself, the
// first slots taken for TPCs; with one, the count that masks the last
// tpcs-keep maskable TPCs, all of them where fewer can be masked (but
// slot 0), and 0 where none is to be taken.
func (m *TPCMap) KeepSlots(keep, tpcs int) int {
	if m == nil {
		return keep
	}
	off := tpcs - keep
	real := m.sortedTPCs()
	if off <= 0 || len(real) == 0 {
		return 0
	}
	if off >= len(real) {
		return max(real[0], 1) // 0 would say no mask
	}
	return real[len(real)-off]
}

// Kept is the TPCs of tpcs that a keep count of slots leaves the kernels
// it masks (0: no mask): by the map, or with none the slots themselves.
func (m *TPCMap) Kept(slots, tpcs int) int {
	if slots == 0 || m == nil {
		return slots
	}
	return tpcs - m.Masked(slots)
}

// Masked is how many TPCs a mask of the slots from slots on takes away.
func (m *TPCMap) Masked(slots int) int {
	n := 0
	for s := range m.TPCs {
		if s >= slots {
			n++
		}
	}
	return n
}
