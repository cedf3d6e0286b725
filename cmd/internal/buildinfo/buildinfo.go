// Package buildinfo says which build of mmk a binary is: the version the
// build stamped into it (make: -ldflags -X, from packaging/version.sh, the
// same string as the .deb's version), else what Go recorded of the
// commit it was built from.
package buildinfo

import (
	"runtime/debug"
)

// version is set at build time:
// -ldflags "-X github.com/mmkgpu/mmk/cmd/internal/buildinfo.version=..."
var version string

// Version is the binary's version: the stamped one, else the commit Go
// recorded ("devel+abc1234", "+dirty" when the tree had changes), else
// "devel".
func Version() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return fromSettings(info.Settings)
}

// fromSettings is the version of a build's VCS settings.
func fromSettings(settings []debug.BuildSetting) string {
	rev, dirty := "", false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	v := "devel+" + rev[:min(len(rev), 7)]
	if dirty {
		v += "+dirty"
	}
	return v
}
