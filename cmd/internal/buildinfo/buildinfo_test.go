package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestVersion(t *testing.T) {
	tests := []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{nil, "devel"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "ba3aac4f00d1"}, {Key: "vcs.modified", Value: "false"}}, "devel+ba3aac4"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "ba3aac4f00d1"}, {Key: "vcs.modified", Value: "true"}}, "devel+ba3aac4+dirty"},
	}
	for _, tc := range tests {
		if got := fromSettings(tc.settings); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.settings, got, tc.want)
		}
	}
	version = "0.0~git20261125.ba3aac4"
	defer func() { version = "" }()
	if got := Version(); got != "0.0~git20261125.ba3aac4" {
		t.Errorf("stamped: %q", got)
	}
}
