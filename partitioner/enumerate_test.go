package partitioner

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// nvidiaA100Configs are the 19 configurations of NVIDIA's MIG user guide
// ("A100 MIG profiles", supported configurations) with the A100-80GB's
// profile names and placements.
var nvidiaA100Configs = []string{
	"7g.80gb@0",
	"4g.40gb@0+3g.40gb@4",
	"4g.40gb@0+2g.20gb@4+1g.10gb@6",
	"4g.40gb@0+1g.10gb@4+1g.10gb@5+1g.10gb@6",
	"3g.40gb@0+3g.40gb@4",
	"3g.40gb@0+2g.20gb@4+1g.10gb@6",
	"3g.40gb@0+1g.10gb@4+1g.10gb@5+1g.10gb@6",
	"2g.20gb@0+2g.20gb@2+3g.40gb@4",
	"2g.20gb@0+1g.10gb@2+1g.10gb@3+3g.40gb@4",
	"1g.10gb@0+1g.10gb@1+2g.20gb@2+3g.40gb@4",
	"1g.10gb@0+1g.10gb@1+1g.10gb@2+1g.10gb@3+3g.40gb@4",
	"2g.20gb@0+2g.20gb@2+2g.20gb@4+1g.10gb@6",
	"2g.20gb@0+2g.20gb@2+1g.10gb@4+1g.10gb@5+1g.10gb@6",
	"2g.20gb@0+1g.10gb@2+1g.10gb@3+2g.20gb@4+1g.10gb@6",
	"2g.20gb@0+1g.10gb@2+1g.10gb@3+1g.10gb@4+1g.10gb@5+1g.10gb@6",
	"1g.10gb@0+1g.10gb@1+2g.20gb@2+2g.20gb@4+1g.10gb@6",
	"1g.10gb@0+1g.10gb@1+2g.20gb@2+1g.10gb@4+1g.10gb@5+1g.10gb@6",
	"1g.10gb@0+1g.10gb@1+1g.10gb@2+1g.10gb@3+2g.20gb@4+1g.10gb@6",
	"1g.10gb@0+1g.10gb@1+1g.10gb@2+1g.10gb@3+1g.10gb@4+1g.10gb@5+1g.10gb@6",
}

func layoutTexts(ls []Layout) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.String()
	}
	return out
}

// TestA100MaximalLayoutsAreNVIDIAs19 checks, layout by layout, that the
// maximal layouts of the five base profiles are NVIDIA's published list.
func TestA100MaximalLayoutsAreNVIDIAs19(t *testing.T) {
	m, _ := LookupModel("A100-80GB")
	ps, err := m.SelectProfiles(strings.Split("1g.10gb,2g.20gb,3g.40gb,4g.40gb,7g.80gb", ","))
	if err != nil {
		t.Fatal(err)
	}
	got := layoutTexts(m.MaximalLayouts(ps))
	want := slices.Clone(nvidiaA100Configs)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("maximal layouts:\n%s\nwant NVIDIA's 19:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMaximalLayoutCounts checks the counts of the issue for every model:
// 19 with the base profiles, 78 with the default ones (which add the
// 2-memory-slice 1g profile).
func TestMaximalLayoutCounts(t *testing.T) {
	for _, key := range ModelKeys() {
		m, _ := LookupModel(key)
		base := []string{m.Profiles[0].Name, m.Profiles[3].Name, m.Profiles[4].Name, m.Profiles[5].Name, m.Profiles[6].Name}
		ps, err := m.SelectProfiles(base)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(m.MaximalLayouts(ps)); n != 19 {
			t.Errorf("%s: %d maximal layouts of %v, want 19", key, n, base)
		}
		if n := len(m.MaximalLayouts(nil)); n != 78 {
			t.Errorf("%s: %d maximal layouts of the default profiles, want 78", key, n)
		}
	}
}

// TestEnumerationMatchesBruteForce checks the enumerator against an
// independent oracle: every subset of (profile, placement) pairs, kept when
// it breaks no hardware rule, for several profile selections.
func TestEnumerationMatchesBruteForce(t *testing.T) {
	m, _ := LookupModel("H100-80GB")
	selections := [][]string{nil, {"1g.10gb", "1g.10gb+me", "3g.40gb"}, {"1g.20gb", "2g.20gb"}, {"7g.80gb"}}
	for _, sel := range selections {
		ps, err := m.SelectProfiles(sel)
		if err != nil {
			t.Fatal(err)
		}
		all, maximal := bruteForce(ps)
		got := layoutTexts(m.Layouts(ps))
		gotMax := layoutTexts(m.MaximalLayouts(ps))
		slices.Sort(got)
		slices.Sort(gotMax)
		if !slices.Equal(got, all) {
			t.Errorf("%v: enumerator found %d layouts, brute force %d", sel, len(got), len(all))
		}
		if !slices.Equal(gotMax, maximal) {
			t.Errorf("%v: enumerator found %d maximal layouts, brute force %d", sel, len(gotMax), len(maximal))
		}
		if len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("%v: a layout is listed twice", sel)
		}
	}
}

func bruteForce(ps []*Profile) (all, maximal []string) {
	type pair struct {
		p     *Profile
		start int
	}
	var pairs []pair
	for _, p := range ps {
		for _, s := range p.Placements {
			pairs = append(pairs, pair{p, s})
		}
	}
	valid := func(set uint32) bool {
		var slot [MemorySlices]int
		compute := 0
		count := map[*Profile]int{}
		for i, pr := range pairs {
			if set&(1<<i) == 0 {
				continue
			}
			for s := pr.start; s < pr.start+pr.p.MemorySlices; s++ {
				slot[s]++
				if slot[s] > 1 {
					return false
				}
			}
			compute += pr.p.ComputeSlices
			count[pr.p]++
			if count[pr.p] > pr.p.MaxCount {
				return false
			}
		}
		return compute <= ComputeSlices
	}
	text := func(set uint32) string {
		var parts []pair
		for i, pr := range pairs {
			if set&(1<<i) != 0 {
				parts = append(parts, pr)
			}
		}
		slices.SortFunc(parts, func(a, b pair) int { return a.start - b.start })
		var b strings.Builder
		for i, pr := range parts {
			if i > 0 {
				b.WriteByte('+')
			}
			b.WriteString(pr.p.Name + "@" + strconv.Itoa(pr.start))
		}
		return b.String()
	}
	for set := uint32(1); set < 1<<len(pairs); set++ {
		if !valid(set) {
			continue
		}
		all = append(all, text(set))
		full := true
		for i := range pairs {
			if set&(1<<i) == 0 && valid(set|1<<i) {
				full = false
				break
			}
		}
		if full {
			maximal = append(maximal, text(set))
		}
	}
	slices.Sort(all)
	slices.Sort(maximal)
	return all, maximal
}

func TestLayoutsAreSortedAndValid(t *testing.T) {
	m, _ := LookupModel("A100-40GB")
	ls := m.Layouts(nil)
	if len(ls) != 722 {
		t.Errorf("A100-40GB has %d layouts of the default profiles, want 722", len(ls))
	}
	for i, l := range ls {
		if _, err := NewLayout(m, l.Instances); err != nil {
			t.Errorf("layout %q is invalid: %v", l, err)
		}
		if i > 0 && len(ls[i-1].Instances) > len(l.Instances) {
			t.Errorf("layout %q (%d instances) after one with %d", l, len(l.Instances), len(ls[i-1].Instances))
		}
	}
	if first := ls[0].String(); first != "7g.40gb@0" {
		t.Errorf("first layout = %q, want the whole GPU", first)
	}
}

// BenchmarkLayouts measures enumerating every layout of a model with its
// default profiles (722 layouts), and only the maximal ones (78).
func BenchmarkLayouts(b *testing.B) {
	for _, key := range ModelKeys() {
		m, _ := LookupModel(key)
		b.Run(key+"/all", func(b *testing.B) {
			for b.Loop() {
				if len(m.Layouts(nil)) != 722 {
					b.Fatal("wrong count")
				}
			}
		})
		b.Run(key+"/maximal", func(b *testing.B) {
			for b.Loop() {
				if len(m.MaximalLayouts(nil)) != 78 {
					b.Fatal("wrong count")
				}
			}
		})
	}
}
