package sqlstore

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// On Postgres a claim moves its messages out of the claim index's
// condition (status 'Pending'), but their entries stay in the index until
// a vacuum removes them. A campaign's claim starts at the campaign's
// oldest entry, so it steps over every entry claimed since the last
// vacuum: the walk grows with each claim of a large campaign, and reads
// pages from disk once the index outgrows shared buffers. Claim floors
// let a claim start past what this process has already claimed.
//
// A floor is the highest (due_at, id) a claim of this process took from a
// campaign: the campaign's Pending messages below it were claimed,
// locked by another claim under way, or not Pending. A message may come
// back below a floor: this store then drops the floor (a write returning
// messages to Pending, a recovery), but another process's write, a claim
// under way that rolls back, or a message added with an earlier due time
// is not seen here. So a floor serves for claimFloorSpan only: then a
// claim without it starts at the campaign's first entry again and finds
// whatever came back.

// claimFloorSpan is how long a floor serves after a claim without one.
const claimFloorSpan = time.Second

// claimFloors are the floors of this process's claims on Postgres.
type claimFloors struct {
	mu sync.Mutex
	m  map[floorKey]claimFloor
	// gen counts the drops: a claim that began before one does not raise
	// the floors.
	gen uint64
	// span is how long a floor serves; zero: claimFloorSpan.
	span time.Duration
}

type floorKey struct {
	channel  messaging.Channel
	campaign messaging.ID
}

// claimFloor is a campaign's floor: the highest due time and id claimed,
// and when the claims building it began without a floor.
type claimFloor struct {
	due   time.Time
	id    messaging.ID
	since time.Time
}

// floorRow is a floor as the claim statements read it (json_to_recordset).
type floorRow struct {
	Campaign string `json:"campaign"`
	Due      string `json:"due"`
	ID       string `json:"id"`
}

// current returns, as JSON, the floors of channel that still serve at
// now, and forgets those that do not; gen is for claimed.
func (f *claimFloors) current(channel messaging.Channel, now time.Time) (_ string, gen uint64, _ error) {
	f.mu.Lock()
	gen = f.gen
	span := f.span
	if span <= 0 {
		span = claimFloorSpan
	}
	rows := make([]floorRow, 0, len(f.m))
	for k, fl := range f.m {
		if k.channel != channel {
			continue
		}
		if now.Sub(fl.since) >= span || now.Before(fl.since) {
			delete(f.m, k)
			continue
		}
		rows = append(rows, floorRow{Campaign: k.campaign.String(), Due: fl.due.UTC().Format(time.RFC3339Nano), ID: fl.id.String()})
	}
	f.mu.Unlock()
	j, err := json.Marshal(rows)
	if err != nil {
		return "", 0, fmt.Errorf("claim floors: %w", err)
	}
	return string(j), gen, nil
}

// claimed raises the floors of channel to the messages a claim took at
// now, unless floors were dropped since its current (gen). A campaign
// without a floor before the claim starts one at now.
func (f *claimFloors) claimed(channel messaging.Channel, gen uint64, msgs []messaging.Message, now time.Time) {
	if len(msgs) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gen != gen {
		return
	}
	if f.m == nil {
		f.m = map[floorKey]claimFloor{}
	}
	for _, m := range msgs {
		k := floorKey{channel, m.CampaignID}
		fl, ok := f.m[k]
		if !ok {
			f.m[k] = claimFloor{due: m.DueAt, id: m.ID, since: now}
			continue
		}
		if c := m.DueAt.Compare(fl.due); c > 0 || (c == 0 && compareIDs(m.ID, fl.id) > 0) {
			fl.due, fl.id = m.DueAt, m.ID
			f.m[k] = fl
		}
	}
}

// drop forgets the floors of the campaigns given, on every channel: some
// of their messages came back to Pending.
func (f *claimFloors) drop(campaigns map[messaging.ID]bool) {
	if len(campaigns) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	for k := range f.m {
		if campaigns[k.campaign] {
			delete(f.m, k)
		}
	}
}

// dropAll forgets every floor.
func (f *claimFloors) dropAll() {
	f.mu.Lock()
	f.gen++
	clear(f.m)
	f.mu.Unlock()
}
