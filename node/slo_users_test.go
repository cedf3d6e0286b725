package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/slo"
)

// TestTwoUsersEndToEnd is issue 54's attack end to end with two users
// on the fake GPU: root's service, whose target its requests cannot meet
// beside nobody's trainer (their kernels share the fake GPU's timeline).
// With slo.restrain_others empty (the default) the controller climbs to
// suspend for it, and nobody's trainer is never stopped: the instance
// lists it shielded. With slo.restrain_others "*" and a stop bound of
// 1 s at a time, half of any 4 s, the trainer is stopped, but not more
// than the bound lets, and its events name the service's job and its
// owner. Needs root (the trainer runs as uid 65534).
func TestTwoUsersEndToEnd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a job as another user")
	}
	for _, others := range []bool{false, true} {
		name := "shielded"
		if others {
			name = "restrain_others"
		}
		t.Run(name, func(t *testing.T) {
			bound := slo.StopBound{Max: time.Second, Share: 0.5, Window: 4 * time.Second}
			sn := newSLONode(t, func(c *Config) {
				if others {
					c.SLO.RestrainOthers, c.SLO.StopBound = []string{"*"}, bound
				}
			})
			h := sn.h
			// nobody's trainer reaches the hook, the replay, the traces,
			// the sockets and the fake GPU's timeline.
			if err := os.MkdirAll(filepath.Join(sn.dir, "run"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{filepath.Dir(sn.replay), filepath.Join(sn.dir, "run")} {
				openToOthers(t, p, 0o755)
			}
			chmodRunnerRoot(t, h)
			if err := os.WriteFile(sn.gpu, make([]byte, 4096), 0o666); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(sn.gpu, 0o666); err != nil {
				t.Fatal(err)
			}
			svc := sn.write(t, "svc.txt", strings.Repeat("s 4 1 1 128 1 1 200 20\n", 4)+"sync 2000\n")
			train := sn.write(t, "train.txt", "t 4 1 1 128 1 1 2000 0\nsync 0\n")
			nobody := jobs.NamedOwner(65534, 65534)
			off, _, err := h.n.Submit(context.Background(), jobs.Spec{Name: "train", Kind: jobs.Offline,
				Command: []string{"env", "MMK_FAKE_GPU=" + sn.gpu, sn.replay, train, "0", "60"}}, "", &nobody)
			if err != nil {
				t.Fatal(err)
			}
			off = h.state(off.ID, jobs.Running)
			on := h.submit(jobs.Spec{Name: "svc", Kind: jobs.Online, SLO: "p99=100us",
				Command: []string{"env", "MMK_FAKE_GPU=" + sn.gpu, sn.replay, svc, "0", "60"}})
			on = h.state(on.ID, jobs.Running)
			// The rung reaches suspend for the service's target.
			for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				v := h.n.SLO()
				if len(v.Instances) == 1 && v.Instances[0].Rung == "suspend" {
					break
				}
				if time.Now().After(end) {
					t.Fatalf("no suspension in 30 s: %+v", v.Instances)
				}
			}
			// The trainer's process, sampled for 8 s on suspend.
			stopped, samples := 0, 0
			for end := time.Now().Add(8 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				frozen, err := jobs.ProcessFrozen(off.PID)
				if procState(t, off.PID) == "T" || err == nil && frozen {
					stopped++
				}
				samples++
			}
			share := float64(stopped) / float64(samples)
			t.Logf("the trainer stopped in %d of %d samples over 8 s on suspend (%.2f)", stopped, samples, share)
			v := h.n.SLO().Instances[0]
			if !others {
				if stopped > 0 || len(v.Shielded) != 1 || v.Shielded[0] != off.ID {
					t.Errorf("another user's trainer stopped in %d of %d samples; shielded %v", stopped, samples, v.Shielded)
				}
				return
			}
			// Stopped, within the bound (a sample's worth of slack).
			if stopped == 0 || share > bound.Share+0.1 {
				t.Errorf("the trainer stopped in %d of %d samples (%.2f), want some and at most %.2f", stopped, samples, share, bound.Share)
			}
			evs, err := h.n.Events(off.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := "for the target of job " + on.ID + " (svc, " + on.Owner.String() + ")"
			named := false
			for _, e := range evs {
				named = named || strings.Contains(e.Reason, want)
			}
			if !named {
				t.Errorf("the trainer's events do not name the service and its owner (%q)", want)
			}
		})
	}
}
