package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mmkgpu/mmk/jobs"
)

// TestYAMLOutput: `-o yaml` writes what -o json does, as YAML with the
// same keys (issue 37, item 6: kubectl's habit).
func TestYAMLOutput(t *testing.T) {
	_, addr := startMMKD(t, "")
	id := submitJob(t, addr, "--name", "train-a", "--", "python3", "a.py")
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"jobs", "-o", "yaml"}, []string{"- id: " + id, "  state: pending", "    name: train-a", "    command:\n        - python3"}},
		{[]string{"job", id, "-o", "yaml"}, []string{"id: " + id, "state: pending", "events:\n    - seq: 1"}},
	}
	for _, tt := range tests {
		out, err := mmkctl(t, append(tt.args, "--addr", addr)...)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v lacks %q:\n%s", tt.args, w, out)
			}
		}
		var v any
		if err := yaml.Unmarshal([]byte(out), &v); err != nil {
			t.Errorf("%v: not YAML: %v", tt.args, err)
		}
	}
}

// TestCancelMany: cancel takes several ids, --state or --all; a job that
// already ended is a note on stderr, not a failure (issue 37, item 6).
func TestCancelMany(t *testing.T) {
	tests := []struct {
		name      string
		args      func(ids []string) []string
		cancelled []int // indexes of the jobs cancelled by the command
		stderr    string
		wantErr   string
	}{
		{"several ids", func(ids []string) []string { return []string{ids[0], ids[1]} }, []int{0, 1}, "", ""},
		{"an ended job", func(ids []string) []string { return []string{ids[0], ids[3]} }, []int{0}, "job " + "%3" + " already ended (succeeded)", ""},
		{"--state", func([]string) []string { return []string{"--state", "running"} }, []int{2}, "", ""},
		{"--all", func([]string) []string { return []string{"--all"} }, []int{0, 1, 2}, "", ""},
		{"nothing named", func([]string) []string { return nil }, nil, "", "give job ids, --name, --state or --all"},
		{"--name", func([]string) []string { return []string{"--name", "b"} }, []int{1}, "", ""},
		{"ids and --all", func(ids []string) []string { return []string{ids[0], "--all"} }, nil, "", "not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, addr := startMMKD(t, "")
			var ids []string
			for _, name := range []string{"a", "b", "c", "d"} {
				ids = append(ids, submitJob(t, addr, "--name", name, "--", "true"))
			}
			must := func(err error) {
				if err != nil {
					t.Fatal(err)
				}
			}
			must(n.SetState(ids[2], jobs.Running, "started"))
			must(n.SetState(ids[3], jobs.Succeeded, "exit status 0"))
			_, stderr, err := mmkctlStderr(t, append([]string{"cancel", "--addr", addr}, tt.args(ids)...)...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.ReplaceAll(tt.stderr, "%3", ids[3]); !strings.Contains(stderr, want) {
				t.Errorf("stderr %q, want %q", stderr, want)
			}
			for i, id := range ids {
				j, _ := n.Job(id)
				want := slicesContains(tt.cancelled, i)
				if (j.State == jobs.Cancelled) != want {
					t.Errorf("job %s (%d) is %s, cancelled wanted: %v", id, i, j.State, want)
				}
			}
		})
	}
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestLogsOfPendingJob: the logs of a job that has not started say so on
// stderr instead of printing nothing (issue 37, item 6).
func TestLogsOfPendingJob(t *testing.T) {
	_, addr := startMMKD(t, "")
	id := submitJob(t, addr, "--", "true")
	out, stderr, err := mmkctlStderr(t, "logs", "--addr", addr, id)
	if err != nil || out != "" || !strings.Contains(stderr, "job "+id+" is pending: it has not started") {
		t.Errorf("logs: out %q, stderr %q, err %v", out, stderr, err)
	}
}

// syncBuf is a buffer the watching command writes while the test reads.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestWatch: `jobs --watch` and `job ID --watch` print what changed
// when it changes, until stopped (issue 37, item 6; issue 53, item 9).
func TestWatch(t *testing.T) {
	for _, what := range []string{"jobs", "job"} {
		t.Run(what, func(t *testing.T) {
			n, addr := startMMKD(t, "")
			id := submitJob(t, addr, "--name", "w", "--", "true")
			args := []string{what, "--addr", addr, "--watch", "--interval", "20ms"}
			if what == "job" {
				args = append(args, id)
			}
			cmd := newRootCommand()
			var out syncBuf
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(args)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- cmd.ExecuteContext(ctx) }()
			waitOut := func(s string) {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for !strings.Contains(out.String(), s) {
					if time.Now().After(deadline) {
						cancel()
						t.Fatalf("output lacks %q:\n%s", s, out.String())
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			waitOut("pending")
			if err := n.SetState(id, jobs.Running, "started"); err != nil {
				t.Fatal(err)
			}
			waitOut("running")
			time.Sleep(100 * time.Millisecond)
			cancel()
			if err := <-done; err != nil {
				t.Errorf("stopped watch: %v", err)
			}
			if c := strings.Count(out.String(), "pending"); what == "jobs" && c != 1 {
				t.Errorf("an unchanged list was printed again (%d times):\n%s", c, out.String())
			}
			// Only what changed comes again: the job's row, not the
			// header (issue 53: the table came whole every 2 s, its ages
			// having moved).
			if c := strings.Count(out.String(), "PLACEMENT"); what == "jobs" && c != 1 {
				t.Errorf("the header came %d times:\n%s", c, out.String())
			}
		})
	}
}

// TestNameOutputAndCancelByName (issue 53, item 9): -o name prints the
// jobs' ids, one a line, for scripts (jobs, job, submit, cancel), and is
// refused where there are no jobs to name; cancel --name cancels the
// jobs of that whole name that have not ended, not those whose name
// merely contains it.
func TestNameOutputAndCancelByName(t *testing.T) {
	n, addr := startMMKD(t, "")
	out, err := mmkctl(t, "submit", "--addr", addr, "-o", "name", "--name", "bert", "--", "x")
	if err != nil {
		t.Fatal(err)
	}
	bert := strings.TrimSpace(out)
	if !jobs.ValidID(bert) {
		t.Fatalf("submit -o name printed %q", out)
	}
	bert2 := submitJob(t, addr, "--name", "bert", "--", "y")
	other := submitJob(t, addr, "--name", "bert-large", "--", "z")
	if out, err := mmkctl(t, "jobs", "--addr", addr, "-o", "name"); err != nil || out != other+"\n"+bert2+"\n"+bert+"\n" {
		t.Errorf("jobs -o name: %q %v", out, err)
	}
	if out, err := mmkctl(t, "job", bert, "--addr", addr, "-o", "name"); err != nil || out != bert+"\n" {
		t.Errorf("job -o name: %q %v", out, err)
	}
	if _, err := mmkctl(t, "gpus", "-o", "name"); err == nil || !strings.Contains(err.Error(), "is for mmkctl jobs, job, submit and cancel") {
		t.Errorf("gpus -o name: %v", err)
	}
	out, err = mmkctl(t, "cancel", "--addr", addr, "--name", "bert", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(out); len(got) != 2 || !slices.Contains(got, bert) || !slices.Contains(got, bert2) {
		t.Errorf("cancel --name bert cancelled %v, want %s and %s", got, bert, bert2)
	}
	if j, _ := n.Job(other); j.State != jobs.Pending {
		t.Errorf("bert-large is %s: cancel --name took a part of a name", j.State)
	}
	if _, err := mmkctl(t, "cancel", "--addr", addr, "--name", "nobody"); err == nil || !strings.Contains(err.Error(), `no job named "nobody" has not ended`) {
		t.Errorf("cancel --name nobody: %v", err)
	}
	if _, err := mmkctl(t, "cancel", "--addr", addr, "--name", "bert", "--all"); err == nil {
		t.Error("cancel --name --all taken")
	}
}

// TestJobsByOwner (issue 53, item 9): mmkctl jobs --owner lists the jobs
// of one user, by name or uid.
func TestJobsByOwner(t *testing.T) {
	n, addr := startMMKD(t, "")
	now := time.Now()
	for i, o := range []*jobs.Owner{{UID: 1000, GID: 1000, Name: "alice"}, {UID: 1001, GID: 1001, Name: "bob"}, {UID: 1000, GID: 1000, Name: "alice"}} {
		n.Put(jobs.Job{ID: fmt.Sprintf("%016d", i+1), Spec: jobs.Spec{Command: []string{"x"}, Kind: jobs.Offline}, State: jobs.Pending, CreatedAt: now, UpdatedAt: now, Owner: o})
	}
	for _, tc := range []struct{ owner, want string }{
		{"alice", "0000000000000003\n0000000000000001\n"},
		{"1001", "0000000000000002\n"},
		{"carol", ""},
	} {
		out, err := mmkctl(t, "jobs", "--addr", addr, "--owner", tc.owner, "-o", "name")
		if err != nil || out != tc.want {
			t.Errorf("--owner %s: %q %v, want %q", tc.owner, out, err, tc.want)
		}
	}
}
