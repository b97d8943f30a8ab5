package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// version writes the module version, the VCS revision the binary was
// built from (with "+dirty" when the tree had changes, and the commit
// time) and the Go version, as the build recorded them.
func version(w io.Writer, info *debug.BuildInfo, ok bool) {
	if !ok {
		fmt.Fprintln(w, "herald (no build information)")
		return
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	fmt.Fprintf(w, "herald %s", v)
	if rev != "" {
		fmt.Fprintf(w, " revision %s%s", rev, dirty)
		if at != "" {
			fmt.Fprintf(w, " (%s)", at)
		}
	}
	fmt.Fprintf(w, " %s\n", info.GoVersion)
}

// mainVersion is the binary's module version, as GET /admin/v1/whoami
// reports it: "(devel)" for a build from a working tree.
func mainVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok || info.Main.Version == "" {
		return "(devel)"
	}
	return info.Main.Version
}
