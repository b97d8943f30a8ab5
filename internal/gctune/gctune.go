// Package gctune holds the garbage collector settings Herald's programs
// run with: the herald binary, and the load programs under bench/ so that
// they measure the library as the binary runs it.
package gctune

import (
	"fmt"
	"math"
	"runtime/debug"
	"runtime/metrics"
)

// Defaults of the collector, each applied unless the Go runtime's own
// variable (GOGC, GOMEMLIMIT) is set.
const (
	// Percent is GOGC: the collector runs once the heap has grown by twice
	// what was live after its last run, rather than by as much.
	Percent = 200
	// MemoryLimit is GOMEMLIMIT, in bytes: the heap is held near 200 MiB
	// when that comes before Percent.
	MemoryLimit = 200 << 20
)

// Apply sets the collector to Percent and MemoryLimit unless getenv
// reports GOGC or GOMEMLIMIT set, each on its own.
//
// While it delivers, Herald keeps a few MiB live and allocates quickly, so
// with GOGC=100 the collector ran hundreds of times a minute and took a
// fifth of the CPU. A 200,000-recipient bulk request holds about 100 MiB
// live, which the limit keeps from tripling. Deployments that take several
// large bulk requests at once should raise GOMEMLIMIT: above the limit the
// collector runs far more often.
func Apply(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(Percent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(MemoryLimit)
	}
}

// Describe reports the collector's settings in force, as GOGC and
// GOMEMLIMIT would set them ("off" for no limit).
func Describe() string {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	limit := "off"
	if l := s[1].Value.Uint64(); l < math.MaxInt64 {
		limit = fmt.Sprintf("%dMiB", l>>20)
	}
	return fmt.Sprintf("GOGC=%d GOMEMLIMIT=%s", s[0].Value.Uint64(), limit)
}
