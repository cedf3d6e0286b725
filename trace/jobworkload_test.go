package trace

import (
	"strings"
	"testing"
	"time"
)

// TestSyntheticJobs: the testbed draws 40 online and 20 offline jobs of
// Table III types, arrivals about 40 s apart, work in the stated ranges.
func TestSyntheticJobs(t *testing.T) {
	jobs := SyntheticJobs(40, 20, 7)
	on := 0
	for i, j := range jobs {
		jt, ok := LookupJobType(j.Type)
		if !ok || jt.Online != j.Online || j.MemoryMiB != jt.MemoryMiB {
			t.Fatalf("job %+v does not match its type %+v", j, jt)
		}
		if j.Online {
			on++
		}
		span := offlineWork
		if j.Online {
			span = onlineWork
		}
		if j.Work < span[0]-time.Second || j.Work > span[1]+time.Second {
			t.Errorf("job %s work %v outside %v", j.ID, j.Work, span)
		}
		if i > 0 && j.Arrival < jobs[i-1].Arrival {
			t.Errorf("arrivals out of order at %d", i)
		}
	}
	if on != 40 || len(jobs) != 60 {
		t.Errorf("%d jobs, %d online: want 60 and 40", len(jobs), on)
	}
	if mean := jobs[len(jobs)-1].Arrival / 60; mean < 25*time.Second || mean > 60*time.Second {
		t.Errorf("mean gap %v, want about 40 s", mean)
	}
}

const openbSample = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,1000,1000,1,500,,LS,Running,100,1100,120
p1,1000,1000,2,1000,,BE,Running,50,500,60
p2,1000,1000,1,1000,,BE,Running,200,300,210
p3,1000,1000,1,0,,BE,Running,10,300,20
p4,1000,1000,1,300,,Burstable,Pending,30,,
`

// TestReadOpenB: single-GPU tasks with a share and a run, in creation
// order from 0; LS online, BE offline; gpu_milli as a memory share.
func TestReadOpenB(t *testing.T) {
	jobs, err := ReadOpenB(strings.NewReader(openbSample), 0, 80000)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].ID != "p0" || jobs[1].ID != "p2" {
		t.Fatalf("jobs %+v: want p0 then p2", jobs)
	}
	if !jobs[0].Online || jobs[1].Online || jobs[0].Arrival != 0 || jobs[1].Arrival != 100*time.Second {
		t.Errorf("kinds or arrivals wrong: %+v", jobs)
	}
	if jobs[0].Work != 980*time.Second || jobs[0].MemoryMiB != 40000 || jobs[1].MemoryMiB != 80000 {
		t.Errorf("work or memory wrong: %+v", jobs)
	}
	for _, bad := range []string{
		"name,num_gpu\n",
		strings.Replace(openbSample, ",LS,", ",VIP,", 1),
		strings.Replace(openbSample, "p0,1000,1000,1,500", "p0,1000,1000,x,500", 1),
	} {
		if _, err := ReadOpenB(strings.NewReader(bad), 0, 80000); err == nil {
			t.Errorf("no error for %q", bad[:40])
		}
	}
}

// FuzzReadOpenB: any input gives jobs or an error, never a panic, and
// jobs read are usable by the simulator.
func FuzzReadOpenB(f *testing.F) {
	f.Add(openbSample)
	f.Add("name,num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\na,1,10,LS,1,2,1\n")
	f.Fuzz(func(t *testing.T, s string) {
		jobs, err := ReadOpenB(strings.NewReader(s), 0, 80000)
		if err != nil {
			return
		}
		for _, j := range jobs {
			if j.Work <= 0 || j.Arrival < 0 || j.MemoryMiB <= 0 {
				t.Fatalf("bad job %+v", j)
			}
			if _, ok := LookupJobType(j.Type); !ok {
				t.Fatalf("unknown type %q", j.Type)
			}
		}
	})
}

// TestLoadWorkloadErrors: bad --workload values name the fault.
func TestLoadWorkloadErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"tiny", `workload "tiny" is not one of`},
		{"testbed:4", "takes no :N"},
		{"openb:0", `N "0" is not a positive integer`},
		{"openb", "set --traces"},
	} {
		if _, err := LoadWorkload(tc.spec, t.TempDir(), 1, 80000); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.spec, err, tc.want)
		}
	}
}
