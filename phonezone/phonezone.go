// Package phonezone tells the time zone of a phone number's owner, from
// the number alone, with the time zone data of libphonenumber (through
// github.com/nyaruka/phonenumbers, its Go port): a country, and for the
// countries with several zones, the area its prefix belongs to. It is how
// Herald keeps quiet hours in the recipient's own time.
//
// Package phonezone uses the standard library and phonenumbers only. The
// time zone database is compiled in (time/tzdata), so the answer does not
// depend on the machine.
package phonezone

import (
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // zones the same on every machine

	"github.com/nyaruka/phonenumbers"
)

// Finder finds the time zones of phone numbers. Its zero value is ready
// to use and safe for concurrent use.
type Finder struct {
	// picked caches, by the set of zones a number may be in, the zone
	// chosen for it, with the time it was chosen at (offsets change with
	// daylight saving time, so the choice is made again each hour).
	picked sync.Map // string -> choice
}

// choice is a zone picked at a time.
type choice struct {
	loc *time.Location
	at  time.Time
}

// Location returns the time zone of phone (digits, with or without a
// leading +, in international form). Where the number's prefix spans
// several zones it is the one whose day starts last (the one furthest
// west: the least UTC offset now), so that a window of the day is open in
// all of them. Nil when the number's zone is unknown.
func (f *Finder) Location(phone string) *time.Location {
	if !strings.HasPrefix(phone, "+") {
		phone = "+" + phone
	}
	num, err := phonenumbers.Parse(phone, "")
	if err != nil {
		return nil
	}
	zones, err := phonenumbers.GetTimezonesForNumber(num)
	if err != nil || len(zones) == 0 || (len(zones) == 1 && zones[0] == phonenumbers.UNKNOWN_TIMEZONE) {
		return nil
	}
	key := strings.Join(zones, ",")
	now := time.Now()
	if c, ok := f.picked.Load(key); ok && now.Sub(c.(choice).at) < time.Hour {
		return c.(choice).loc
	}
	var best *time.Location
	bestOffset := 0
	for _, z := range zones {
		loc, err := time.LoadLocation(z)
		if err != nil {
			continue
		}
		if _, off := now.In(loc).Zone(); best == nil || off < bestOffset {
			best, bestOffset = loc, off
		}
	}
	if best != nil {
		f.picked.Store(key, choice{best, now})
	}
	return best
}
