package predictor

import "testing"

// TestAddCoRunner: co-runners add up their utilisation and percentage;
// their SM utilisation counts above the job's priority where theirs is
// higher (a lower number), below where it is lower, and in neither at
// the same priority.
func TestAddCoRunner(t *testing.T) {
	var c CoFeatures
	c.AddCoRunner(Util{SM: 10, DRAM: 1}, 30, 0, 1) // above the job
	c.AddCoRunner(Util{SM: 20, DRAM: 2}, 40, 1, 1) // same priority
	c.AddCoRunner(Util{SM: 40, DRAM: 4}, 50, 2, 1) // below the job
	want := CoFeatures{CoUtil: Util{SM: 70, DRAM: 7}, CoMPSPct: 120, CoAboveSM: 10, CoBelowSM: 40}
	if c != want {
		t.Errorf("features %+v, want %+v", c, want)
	}
}
