package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"module version", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"nothing stamped", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
		{"vcs", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "3e912ac0123456789abcdef"},
			{Key: "vcs.time", Value: "2026-11-28T16:00:00Z"},
			{Key: "vcs.modified", Value: "false"},
		}}, "devel 3e912ac01234 2026-11-28T16:00:00Z"},
		{"vcs modified", debug.BuildInfo{Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "3e912ac0123456789abcdef"},
			{Key: "vcs.modified", Value: "true"},
		}}, "devel 3e912ac01234 (modified)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionFromBuildInfo(&tc.bi); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
