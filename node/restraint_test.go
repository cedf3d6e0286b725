package node

import (
	"testing"

	"github.com/mmkgpu/mmk/kernelsched/server"
	"github.com/mmkgpu/mmk/slo"
)

// TestRestraintOf: what a job is told of its instance's controller, for
// each way a rung reaches it (or does not): suspended, released for its
// progress floor, masked throughout or only while requests run, held,
// beyond the rung's reach (another user's), without a hook, and nothing
// at the lowest rung. Before, a request-scoped mask read "masked to N
// TPCs", as if it held throughout.
func TestRestraintOf(t *testing.T) {
	view := func(rung string, mod func(*server.SLOView)) instanceSLO {
		v := server.SLOView{Active: true, Level: 1, Rung: rung,
			Offline:   []server.TaskRef{{PID: 10, Job: "off"}, {PID: 11, Job: "other"}},
			Services:  []server.ServiceView{{TaskRef: server.TaskRef{PID: 20, Job: "svc"}}},
			Decisions: []server.SLODecision{{Decision: slo.Decision{Reason: "priority -> " + rung + ": tighten"}}}}
		if mod != nil {
			mod(&v)
		}
		return instanceSLO{SLOView: v}
	}
	for _, tc := range []struct {
		name      string
		job       string
		in        instanceSLO
		state     string
		how       string
		restrains bool
	}{
		{"suspended", "off", view("suspend", func(v *server.SLOView) { v.Suspended = []int{10} }), "suspended", "suspended", true},
		{"released for its floor", "off", view("suspend", func(v *server.SLOView) { v.Unstopped = []int{10} }), "released", "running for its progress floor between suspensions (slo.max_stop)", true},
		{"masked throughout", "off", view("tpcs=0.25", func(v *server.SLOView) { v.TPCKeep = 16 }), "masked", "masked to 16 TPCs", true},
		{"masked during requests", "off", view("tpcs=0.25/req", func(v *server.SLOView) { v.TPCKeep = 16 }), "masked", "masked to 16 TPCs while requests run", true},
		{"held", "off", view("hold", nil), "held", "its kernels held while requests run (hold)", true},
		{"another user's, shielded from the mask", "off", view("tpcs=0.25", func(v *server.SLOView) { v.TPCKeep = 16; v.Shielded = []int{10} }), "", "", false},
		{"no hook connected", "unseen", view("suspend", func(v *server.SLOView) { v.Suspended = []int{10} }), "", "", false},
		{"lowest rung", "off", view("priority", func(v *server.SLOView) { v.Level = 0 }), "", "", false},
		{"controller off", "off", view("suspend", func(v *server.SLOView) { v.Active = false; v.Suspended = []int{10} }), "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := slo.ParseRung(tc.in.Rung); err != nil {
				t.Fatalf("the test's rung %q: %v", tc.in.Rung, err)
			}
			r := restraintOf(tc.job, tc.in)
			if (r != nil) != tc.restrains {
				t.Fatalf("restraint %+v, want one: %v", r, tc.restrains)
			}
			if r == nil {
				return
			}
			if r.State != tc.state || r.How != tc.how || r.Rung != tc.in.Rung {
				t.Errorf("state %q how %q rung %q, want %q %q %q", r.State, r.How, r.Rung, tc.state, tc.how, tc.in.Rung)
			}
			if len(r.For) != 1 || r.For[0] != "svc" || r.Reason != tc.in.Decisions[0].Reason {
				t.Errorf("for %v reason %q, want [svc] and the last decision", r.For, r.Reason)
			}
		})
	}
}
