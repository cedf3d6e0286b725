package partitioner

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestH200TableMatchesGPUFacts checks the H200 table against
// shared/GPU-FACTS.md (nvidia-smi mig -lgip and -lgipp on the test machine).
func TestH200TableMatchesGPUFacts(t *testing.T) {
	m, err := LookupModel("H200-141GB")
	if err != nil {
		t.Fatal(err)
	}
	// profile, id, max, memory GiB as printed, SMs, placements:size
	facts := []string{
		"1g.18gb 19 7 16.00 16 {0,1,2,3,4,5,6}:1",
		"1g.18gb+me 20 1 16.00 16 {0,1,2,3,4,5,6}:1",
		"1g.35gb 15 4 32.50 26 {0,2,4,6}:2",
		"2g.35gb 14 3 32.50 32 {0,2,4}:2",
		"3g.71gb 9 2 69.75 60 {0,4}:4",
		"4g.71gb 5 1 69.75 64 {0}:4",
		"7g.141gb 0 1 140.00 132 {0}:8",
	}
	var got []string
	for _, p := range m.Profiles {
		got = append(got, fmt.Sprintf("%s %d %d %.2f %d {%s}:%d", p.Name, p.ID, p.MaxCount,
			float64(p.MemoryMiB)/1024, p.SMs, strings.ReplaceAll(joinInts(p.Placements), " ", ""), p.MemorySlices))
	}
	if !slices.Equal(got, facts) {
		t.Errorf("H200 table:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(facts, "\n"))
	}
}

// TestBuiltinModelsAreConsistent checks invariants every model must hold.
func TestBuiltinModelsAreConsistent(t *testing.T) {
	for _, key := range ModelKeys() {
		m, err := LookupModel(key)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, p := range m.Profiles {
			if seen[p.ID] {
				t.Errorf("%s: duplicate profile id %d", key, p.ID)
			}
			seen[p.ID] = true
			if !strings.HasPrefix(p.Name, fmt.Sprintf("%dg.", p.ComputeSlices)) {
				t.Errorf("%s: %s does not name its %d compute slices", key, p.Name, p.ComputeSlices)
			}
			for _, s := range p.Placements {
				if s < 0 || s+p.MemorySlices > MemorySlices || s%p.MemorySlices != 0 && p.MemorySlices > 1 {
					t.Errorf("%s: %s placement %d of size %d is outside or misaligned", key, p.Name, s, p.MemorySlices)
				}
			}
			if p.MemoryMiB*8 > m.MemoryMiB*int64(p.MemorySlices)+1024 || p.SMs > m.SMs {
				t.Errorf("%s: %s has more than its share of memory or SMs", key, p.Name)
			}
		}
	}
}

func TestModelKeyFor(t *testing.T) {
	tests := []struct {
		name string
		mib  int64
		want string
	}{
		{"NVIDIA H200", 143771, "H200-141GB"},
		{"NVIDIA H100 80GB HBM3", 81559, "H100-80GB"},
		{"NVIDIA H100 PCIe", 81559, "H100-80GB"},
		{"NVIDIA H100 NVL", 95830, ""},
		{"NVIDIA GH200 480GB", 97871, ""},
		{"NVIDIA A100-SXM4-40GB", 40960, "A100-40GB"},
		{"NVIDIA A100-PCIE-40GB", 40536, "A100-40GB"},
		{"NVIDIA A100-SXM4-80GB", 81920, "A100-80GB"},
		{"NVIDIA A100 80GB PCIe", 81920, "A100-80GB"},
		{"Tesla T4", 15360, ""},
		{"", 0, ""},
	}
	for _, tt := range tests {
		if got := ModelKeyFor(tt.name, tt.mib); got != tt.want {
			t.Errorf("ModelKeyFor(%q, %d) = %q, want %q", tt.name, tt.mib, got, tt.want)
		}
	}
}

func TestLookupModel(t *testing.T) {
	if m, err := LookupModel("h100-80gb"); err != nil || m.Key != "H100-80GB" {
		t.Errorf("LookupModel is not case-insensitive: %v, %v", m, err)
	}
	_, err := LookupModel("V100")
	if err == nil || !strings.Contains(err.Error(), `"V100"`) || !strings.Contains(err.Error(), "H200-141GB") {
		t.Errorf("LookupModel(V100) error = %v, want one naming the key and the known ones", err)
	}
}

func TestSelectProfiles(t *testing.T) {
	m, _ := LookupModel("A100-80GB")
	tests := []struct {
		names   []string
		want    string
		wantErr string
	}{
		{nil, "1g.10gb 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb", ""},
		{[]string{"3g.40gb", " 1g.10gb+me"}, "3g.40gb 1g.10gb+me", ""},
		{[]string{"3g.41gb"}, "", `no profile "3g.41gb" on A100-80GB`},
		{[]string{"2g.20gb", "2g.20gb"}, "", `profile "2g.20gb" given twice`},
	}
	for _, tt := range tests {
		ps, err := m.SelectProfiles(tt.names)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("SelectProfiles(%q) error = %v, want %q", tt.names, err, tt.wantErr)
			}
			continue
		}
		if err != nil || profileNames(ps) != tt.want {
			t.Errorf("SelectProfiles(%q) = %q, %v; want %q", tt.names, profileNames(ps), err, tt.want)
		}
	}
}

func profileNames(ps []*Profile) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return strings.Join(names, " ")
}

func TestModelDiff(t *testing.T) {
	a, _ := LookupModel("H100-80GB")
	b := *a
	b.Profiles = slices.Clone(a.Profiles)
	b.Profiles[2].SMs = 14
	b.Profiles[4].Placements = []int{0}
	b.Profiles = b.Profiles[:6]
	got := a.Diff(&b)
	want := []string{"1g.20gb: SMs 26 != 14", "3g.40gb: placements [0 4] != [0]", "7g.80gb: only in H100-80GB"}
	if !slices.Equal(got, want) {
		t.Errorf("Diff = %q, want %q", got, want)
	}
	if d := a.Diff(a); d != nil {
		t.Errorf("a model differs from itself: %q", d)
	}
}
