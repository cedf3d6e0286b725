package kernelsched

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// writeProfiles writes a profile file as the profiling phase does.
func writeProfiles(path string, profiles []*TaskProfile) error {
	var buf bytes.Buffer
	if err := WriteProfiles(&buf, profiles); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

const us = time.Microsecond

// kernelOf is a one-block kernel id for tests.
func kernelOf(name string) KernelID {
	return KernelID{Name: name, Grid: Dim3{1, 1, 1}, Block: Dim3{32, 1, 1}}
}

// profileOf builds a profile where each named kernel has the given SK and SG.
func profileOf(key string, stats map[string][2]time.Duration) *TaskProfile {
	p := &TaskProfile{Key: key, Runs: 1}
	for name, v := range stats {
		p.Kernels = append(p.Kernels, KernelStat{ID: kernelOf(name), Count: 1, SK: v[0], Gaps: 1, SG: v[1], SGMax: v[1]})
	}
	sortKernels(p.Kernels)
	return p
}

// bench is a scheduler under test with helpers to drive it.
type bench struct {
	t        *testing.T
	s        *Scheduler
	released []string // kernel names in release order
	seqs     map[string]uint64
	tasks    map[string]TaskID
}

func newBench(t *testing.T, policy string, cfg Config) *bench {
	t.Helper()
	s, err := New(policy, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &bench{t: t, s: s, seqs: map[string]uint64{}, tasks: map[string]TaskID{}}
}

func (b *bench) task(spec TaskSpec) TaskID {
	b.t.Helper()
	id, err := b.s.AddTask(spec)
	if err != nil {
		b.t.Fatal(err)
	}
	b.tasks[spec.Name] = id
	return id
}

// arrive makes task launch kernel `name` (estimate from its profile) and
// schedules; it returns the kernels released by that decision.
func (b *bench) arrive(now time.Duration, task, name string) []string {
	b.t.Helper()
	id := b.tasks[task]
	tk, _ := b.s.Task(id)
	l := Launch{Task: id, Kernel: kernelOf(name), Est: tk.Spec.Profile.Estimate(kernelOf(name))}
	seq, err := b.s.Arrive(now, l)
	if err != nil {
		b.t.Fatal(err)
	}
	b.seqs[name] = seq
	return b.schedule(now)
}

// complete reports kernel `name` of task finished and schedules.
func (b *bench) complete(now time.Duration, task, name string) []string {
	b.t.Helper()
	if err := b.s.Complete(now, b.tasks[task], b.seqs[name]); err != nil {
		b.t.Fatal(err)
	}
	return b.schedule(now)
}

func (b *bench) schedule(now time.Duration) []string {
	rel, _ := b.s.Schedule(now)
	var names []string
	for _, l := range rel {
		names = append(names, l.Kernel.Name)
	}
	b.released = append(b.released, names...)
	return names
}

// drain completes every released kernel at now and schedules.
func (b *bench) drain(now time.Duration) []string {
	b.t.Helper()
	for _, tk := range b.s.Tasks() {
		for len(tk.out) > 0 {
			if err := b.s.Complete(now, tk.ID, tk.out[0].seq); err != nil {
				b.t.Fatal(err)
			}
		}
	}
	return b.schedule(now)
}
