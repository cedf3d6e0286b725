package predictor

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func sample(run, job string, pct, co int, target float64) Sample {
	s := Sample{Run: run, Job: job, Kind: KindOf(job), Batch: 32, MPSPercent: pct, SMs: 132, CoRunners: co,
		JobUtil: Util{80, 40, 30, 99, 45}, CoFeatures: CoFeatures{CoUtil: Util{SM: float64(10 * co)}}, RunUtil: Util{70, 35, 25, 98, 40}, Extended: true}
	if s.Kind == Online {
		s.IterMs, s.ItemsPerS = target, 32000/target
	} else {
		s.ItemsPerS, s.IterMs = target, 32000/target
	}
	return s
}

func writeSamples(t testing.TB, ss []Sample) []byte {
	var b bytes.Buffer
	if err := WriteHeader(&b, Header{"gpu": "NVIDIA H200"}, []string{"gpu"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		b.WriteString(strings.Join(s.Record(), ",") + "\n")
	}
	return b.Bytes()
}

func TestSamplesRoundTrip(t *testing.T) {
	want := []Sample{sample("resnet50_infer@100", "resnet50_infer", 100, 0, 5.38), sample("a@50+bert_train@50", "bert_train", 50, 1, 225.5)}
	h, got, err := ReadSamples(bytes.NewReader(writeSamples(t, want)))
	if err != nil {
		t.Fatal(err)
	}
	if h["gpu"] != "NVIDIA H200" || !reflect.DeepEqual(got, want) {
		t.Fatalf("header %v, samples\n got %+v\nwant %+v", h, got, want)
	}
}

func TestReadSamplesNamesLineAndColumn(t *testing.T) {
	good := string(writeSamples(t, []Sample{sample("r@100", "resnet50_infer", 100, 0, 5)}))
	tests := []struct{ name, from, to, want string }{
		{"bad percentage", ",online,32,100,", ",online,32,101,", "samples line 4 column 5 (mps_pct): \"101\""},
		{"bad kind", ",online,", ",batch,", "column 3 (kind)"},
		{"kind against the job", ",online,", ",offline,", "is not online, the kind of resnet50_infer"},
		{"not a number", ",80,40,", ",eighty,40,", "column 8 (job_sm_util)"},
		{"zero target", ",6400,5,70,", ",6400,0,70,", "column 19 (iter_ms): \"0\" must be positive"},
		{"header", "items_per_s", "items", "column 18: header \"items\""},
		{"missing field", ",online,32,", ",32,", "samples line 4: wrong number of fields"},
	}
	for _, tt := range tests {
		_, _, err := ReadSamples(strings.NewReader(strings.Replace(good, tt.from, tt.to, 1)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

func FuzzReadSamples(f *testing.F) {
	f.Add(writeSamples(f, []Sample{sample("r@100", "resnet50_infer", 100, 0, 5)}))
	f.Add([]byte("# x=y\n" + strings.Join(Columns, ",") + "\n"))
	f.Add([]byte("garbage"))
	old := sample("a_infer@100+b_train@50", "a_infer", 100, 1, 5)
	f.Add([]byte(strings.Join(Columns, ",") + "\n" + strings.Join(old.Record()[:len(Columns)], ",") + "\n"))
	ext := sample("a_infer@100+b_train@50/p1", "b_train", 50, 1, 200)
	ext.Rep, ext.MPSPriority, ext.CoMPSPct, ext.IterCV = 1, 1, 100, 0.02
	f.Add(writeSamples(f, []Sample{ext}))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, ss, err := ReadSamples(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, s := range ss {
			if s.Target() <= 0 || s.MPSPercent < 1 || s.MPSPercent > 100 || s.Job == "" || s.MPSPriority < 0 || s.MPSPriority > 1 || s.Rep < 0 {
				t.Fatalf("accepted an invalid sample %+v", s)
			}
		}
		// What reads must write and read back the same.
		_, again, err := ReadSamples(bytes.NewReader(writeSamples(t, ss)))
		if err != nil || len(again) != len(ss) {
			t.Fatalf("re-reading %d samples: %d, %v", len(ss), len(again), err)
		}
	})
}

func TestPlan(t *testing.T) {
	spec := PlanSpec{Jobs: []string{"a_infer", "b_train", "c_train", "d_infer"}, AlonePercents: []int{10, 50, 100}, Pairs: 5, Triples: 4, Seed: 3}
	runs, err := Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4*3+5+4 {
		t.Fatalf("%d runs, want 21", len(runs))
	}
	again, _ := Plan(spec)
	if !reflect.DeepEqual(runs, again) {
		t.Fatal("the same seed gave another plan")
	}
	seen := map[string]bool{}
	for i, r := range runs {
		if seen[r.Key()] {
			t.Fatalf("run %s twice", r.Key())
		}
		seen[r.Key()] = true
		if i < 4 && (len(r) != 1 || r[0].Percent != 100) {
			t.Fatalf("run %d is %s: alone runs at 100 %% come first", i, r.Key())
		}
		back, err := ParseRunKey(r.Key())
		if err != nil || back.Key() != r.Key() {
			t.Fatalf("key %s does not parse back: %v", r.Key(), err)
		}
		for _, m := range r {
			if m.Percent%10 != 0 || m.Percent < 10 || m.Percent > 100 {
				t.Fatalf("run %s: percentage %d", r.Key(), m.Percent)
			}
		}
	}
	if _, err := Plan(PlanSpec{Jobs: spec.Jobs, AlonePercents: []int{50}}); err == nil {
		t.Fatal("a plan without alone runs at 100 % was accepted")
	}
	if _, err := ParseRunKey("a@x+b@10"); err == nil || !strings.Contains(err.Error(), `part "a@x"`) {
		t.Fatalf("ParseRunKey: %v", err)
	}
}

// TestReadSamplesWithoutExtendedColumns: a file of the first format
// (no repetitions, no priorities) reads with priority 0 everywhere, the
// co-runners' shares from the run's key, and Extended false; a sample
// whose co_runners disagree with its run is an error.
func TestReadSamplesWithoutExtendedColumns(t *testing.T) {
	s := sample("b_train@30+resnet50_infer@100+vgg19_train@40", "resnet50_infer", 100, 2, 5)
	var b bytes.Buffer
	b.WriteString(strings.Join(Columns, ",") + "\n")
	b.WriteString(strings.Join(s.Record()[:len(Columns)], ",") + "\n")
	_, got, err := ReadSamples(&b)
	if err != nil || len(got) != 1 {
		t.Fatalf("%v, %v", got, err)
	}
	if g := got[0]; g.Extended || g.CoMPSPct != 70 || g.MPSPriority != 0 || g.Rep != 0 {
		t.Errorf("sample %+v: want not extended, co-runners' shares 70", g)
	}
	bad := strings.Join(Columns, ",") + "\n" + strings.Replace(strings.Join(s.Record()[:len(Columns)], ","), ",100,132,2,", ",100,132,1,", 1) + "\n"
	if _, _, err := ReadSamples(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "column 7 (co_runners): 1, but run") {
		t.Errorf("co_runners against the run: %v", err)
	}
	ext := sample("a_infer@100+b_train@50/p1", "b_train", 50, 1, 200)
	ext.Rep, ext.MPSPriority, ext.CoMPSPct, ext.CoAboveSM, ext.IterCV = 2, 1, 100, 80.5, 0.03
	_, back, err := ReadSamples(bytes.NewReader(writeSamples(t, []Sample{ext})))
	if err != nil || !reflect.DeepEqual(back, []Sample{ext}) {
		t.Errorf("extended round trip: %+v, %v", back, err)
	}
	wrong := strings.Replace(string(writeSamples(t, []Sample{ext})), ",2,1,100,80.5,", ",2,3,100,80.5,", 1)
	if _, _, err := ReadSamples(strings.NewReader(wrong)); err == nil || !strings.Contains(err.Error(), "column 26 (mps_prio)") {
		t.Errorf("priority 3: %v", err)
	}
}
