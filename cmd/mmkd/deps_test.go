package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDaemonLinksNoSimulator: the daemon and the packages it is made of
// (node, web) never import a simulator (sim, sim/jobsim): the simulators
// are tools for experiments, and the formats and the profiling phase the
// daemon needs live in trace. Nor do they link Kubernetes' libraries: the
// DRA driver (dra, cmd/mmk-dra) is a binary of its own that talks to mmkd
// over its API.
func TestDaemonLinksNoSimulator(t *testing.T) {
	// go test puts the go command that runs it first on PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	for _, pkg := range []string{"github.com/mmkgpu/mmk/cmd/mmkd", "github.com/mmkgpu/mmk/node", "github.com/mmkgpu/mmk/web"} {
		out, err := exec.Command(goTool, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed only %v", pkg, deps)
		}
		for _, d := range deps {
			if d == "github.com/mmkgpu/mmk/sim" || strings.HasPrefix(d, "github.com/mmkgpu/mmk/sim/") {
				t.Errorf("%s depends on the simulator package %s", pkg, d)
			}
			if d == "github.com/mmkgpu/mmk/dra" || strings.HasPrefix(d, "k8s.io/") {
				t.Errorf("%s depends on the Kubernetes package %s", pkg, d)
			}
		}
	}
}
