package jobs

import (
	"testing"
)

// TestExitRecordOnFullDisk (issue 38, row 6): a job that ends while its
// shim cannot write a new exit.json (the disk filled up) gets its exit
// status recorded all the same, in the space the shim set aside when it
// started. Before the fix the shim gave up and the job was "supervisor
// lost".
func TestExitRecordOnFullDisk(t *testing.T) {
	o := testShim(RunnerOptions{})
	o.ShimEnv = []string{testModeEnv + "=shim-full-disk"}
	r := newTestRunner(t, o)
	r.o.ShimEnv = o.ShimEnv // newTestRunner sets the plain shim's
	for _, tc := range exitCases {
		t.Run(tc.name, func(t *testing.T) {
			l := shLaunch(t.TempDir(), tc.script)
			start(t, r, l)
			e := wait(t, r, l.JobID)
			if e.Code != tc.code || e.Signal != tc.signal || e.Error != "" {
				t.Fatalf("exit %+v, want code %d signal %q", e, tc.code, tc.signal)
			}
		})
	}
}
