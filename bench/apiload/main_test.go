package main

import (
	"os"
	"testing"

	"github.com/mmkgpu/mmk/jobs"
)

// TestMain lets the test binary be the job supervisor of the mmkd it
// starts.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "shim" {
		os.Exit(jobs.ShimMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}
