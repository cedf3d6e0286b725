package partitioner

import (
	"slices"
	"strings"
	"testing"
)

func mustParse(t testing.TB, m *Model, text string) Layout {
	t.Helper()
	l, err := ParseLayout(m, text)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func stepTexts(r *Reconfiguration) []string {
	out := make([]string, len(r.Steps))
	for i, s := range r.Steps {
		out[i] = s.String()
	}
	return out
}

func instanceTexts(gis []GPUInstance) []string {
	var out []string
	for _, gi := range gis {
		out = append(out, gi.String())
	}
	return out
}

func TestPlanReconfiguration(t *testing.T) {
	m, _ := LookupModel("A100-80GB")
	tests := []struct {
		name, from, to string
		steps          []string
		kept, idle     []string
	}{
		{
			name: "same layout: nothing to do",
			from: "4g.40gb@0+3g.40gb@4", to: "4g.40gb@0+3g.40gb@4",
			kept: []string{"4g.40gb@0", "3g.40gb@4"},
		},
		{
			name: "empty GPU",
			from: "", to: "3g.40gb@0+3g.40gb@4",
			steps: []string{
				"create GPU instance 3g.40gb@0", "create compute instance on GPU instance 3g.40gb@0",
				"create GPU instance 3g.40gb@4", "create compute instance on GPU instance 3g.40gb@4",
			},
		},
		{
			name: "split the right half, keep the left",
			from: "4g.40gb@0+3g.40gb@4", to: "4g.40gb@0+2g.20gb@4+1g.10gb@6",
			steps: []string{
				"destroy the compute instance of GPU instance 3g.40gb@4", "destroy GPU instance 3g.40gb@4",
				"create GPU instance 2g.20gb@4", "create compute instance on GPU instance 2g.20gb@4",
				"create GPU instance 1g.10gb@6", "create compute instance on GPU instance 1g.10gb@6",
			},
			kept: []string{"4g.40gb@0"}, idle: []string{"3g.40gb@4"},
		},
		{
			name: "same profile, other placement, is a new instance",
			from: "3g.40gb@0", to: "3g.40gb@4",
			steps: []string{
				"destroy the compute instance of GPU instance 3g.40gb@0", "destroy GPU instance 3g.40gb@0",
				"create GPU instance 3g.40gb@4", "create compute instance on GPU instance 3g.40gb@4",
			},
			idle: []string{"3g.40gb@0"},
		},
		{
			name: "to empty",
			from: "1g.10gb@0+2g.20gb@4", to: "",
			steps: []string{
				"destroy the compute instance of GPU instance 1g.10gb@0", "destroy GPU instance 1g.10gb@0",
				"destroy the compute instance of GPU instance 2g.20gb@4", "destroy GPU instance 2g.20gb@4",
			},
			idle: []string{"1g.10gb@0", "2g.20gb@4"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from := mustParse(t, m, tt.from)
			r, err := PlanReconfiguration(m, InstancesOf(from), mustParse(t, m, tt.to))
			if err != nil {
				t.Fatal(err)
			}
			if got := stepTexts(r); !slices.Equal(got, tt.steps) {
				t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.steps, "\n"))
			}
			if got := instanceTexts(r.Kept); !slices.Equal(got, tt.kept) {
				t.Errorf("kept %q, want %q", got, tt.kept)
			}
			if got := instanceTexts(r.MustBeIdle); !slices.Equal(got, tt.idle) {
				t.Errorf("must be idle %q, want %q", got, tt.idle)
			}
		})
	}
}

// TestPlanReplacesOnlyComputeInstances covers GPU instances that exist at a
// target placement but not in mmk's shape (one whole compute instance):
// the GPU instance stays, its compute instances are replaced.
func TestPlanReplacesOnlyComputeInstances(t *testing.T) {
	m, _ := LookupModel("H100-80GB")
	current := []GPUInstance{
		{ID: 1, Profile: "3g.40gb", Start: 0, Size: 4, ComputeSlices: 3, ComputeInstances: []ComputeInstance{
			{ID: 0, ComputeSlices: 1}, {ID: 1, ComputeSlices: 2},
		}},
		{ID: 2, Profile: "3g.40gb", Start: 4, Size: 4, ComputeSlices: 3},
	}
	r, err := PlanReconfiguration(m, current, mustParse(t, m, "3g.40gb@0+3g.40gb@4"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"destroy compute instance 0 of GPU instance 1 (3g.40gb@0)",
		"destroy compute instance 1 of GPU instance 1 (3g.40gb@0)",
		"create compute instance on GPU instance 1 (3g.40gb@0)",
		"create compute instance on GPU instance 2 (3g.40gb@4)",
	}
	if got := stepTexts(r); !slices.Equal(got, want) {
		t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := instanceTexts(r.MustBeIdle); !slices.Equal(got, []string{"3g.40gb@0"}) {
		t.Errorf("must be idle %q, want only the instance whose compute instances go", got)
	}
	if len(r.Kept) != 0 {
		t.Errorf("kept %q, want none untouched", instanceTexts(r.Kept))
	}
}

// TestPlanIsMinimal checks, for every pair of maximal layouts of the
// default H100 profiles, that the plan touches exactly the instances that
// differ: two steps per destroyed and two per created instance.
func TestPlanIsMinimal(t *testing.T) {
	m, _ := LookupModel("H100-80GB")
	layouts := m.MaximalLayouts(nil)
	for _, from := range layouts {
		for _, to := range layouts {
			r, err := PlanReconfiguration(m, InstancesOf(from), to)
			if err != nil {
				t.Fatal(err)
			}
			common := 0
			for _, in := range from.Instances {
				if slices.ContainsFunc(to.Instances, func(x Instance) bool { return x.String() == in.String() }) {
					common++
				}
			}
			want := 2*(len(from.Instances)-common) + 2*(len(to.Instances)-common)
			if len(r.Steps) != want || len(r.Kept) != common {
				t.Fatalf("%s -> %s: %d steps, %d kept; want %d and %d", from, to, len(r.Steps), len(r.Kept), want, common)
			}
			lastDestroy, firstCreate := -1, len(r.Steps)
			for i, s := range r.Steps {
				if s.Kind == DestroyComputeInstance || s.Kind == DestroyGPUInstance {
					lastDestroy = i
				} else if i < firstCreate {
					firstCreate = i
				}
			}
			if lastDestroy > firstCreate {
				t.Fatalf("%s -> %s: a creation comes before a destruction", from, to)
			}
		}
	}
}

func TestPlanRejectsBadInput(t *testing.T) {
	m, _ := LookupModel("A100-40GB")
	bad := []GPUInstance{{ID: 1, Profile: "9g.99gb", Start: 0}}
	if _, err := PlanReconfiguration(m, bad, Layout{Model: m}); err == nil || !strings.Contains(err.Error(), `"9g.99gb"`) {
		t.Errorf("unknown current profile: error = %v", err)
	}
	p, _ := m.Profile("3g.20gb")
	overlap := Layout{Model: m, Instances: []Instance{{Profile: p, Start: 0}, {Profile: p, Start: 0}}}
	if _, err := PlanReconfiguration(m, nil, overlap); err == nil || !strings.Contains(err.Error(), "target layout") {
		t.Errorf("invalid target: error = %v", err)
	}
}
