// Package memstore is Herald's in-memory store: it implements
// campaign.Store, delivery.Store and survey.Store with maps under one
// mutex, and passes the same conformance suite (store/storetest) as the SQL
// stores. It serves unit tests, examples and embedders who need no
// persistence; everything is lost when the process ends.
//
// Values are copied in and out: a caller never shares memory with the
// store. Lookups that would otherwise scan everything are indexed: API key
// hashes, template names per company, messages per campaign, per phone
// number and per external user id, due messages per channel (a heap
// ordered by DueAt) and messages in flight.
//
// Where the ports leave a detail open, memstore follows the choices
// documented in package storetest.
package memstore

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/idempotency"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/optout"
)

// Store is the in-memory store. The zero value is not usable; use New.
type Store struct {
	mu sync.Mutex

	companies  map[messaging.ID]*company
	apiKeys    map[string]*apiKey // by selector
	lastAPIKey int64

	senders    map[int64]messaging.SMSSender
	lastSender int64
	chats      map[int64]messaging.ChatService
	lastChat   int64
	// contacts holds when each person last wrote to each chat service.
	contacts map[contactKey]time.Time
	// replays holds the callback keys taken, each until a time.
	replays map[string]time.Time

	templates     map[messaging.ID]*messaging.Template
	templateNames map[lookupKey]messaging.ID // (company, name) -> template

	campaigns map[messaging.ID]*campaignRow

	messages   map[messaging.ID]*messaging.Message
	byPhone    index
	byExternal index
	sending    map[messaging.ID]string // Sending messages -> the owner of the claim
	claimers   map[string]time.Time    // owner -> last heartbeat
	// unconfirmed holds the Sent SMS past the receipt timeout.
	unconfirmed map[messaging.ID]struct{}
	// receiptSweep is where ExpireReceipts got to.
	receiptSweep time.Time
	due          map[messaging.Channel]*dueHeap

	results           map[messaging.ID]*messaging.SurveyResult // by message id: the first answer
	resultsByCampaign map[messaging.ID][]*messaging.SurveyResult
	resultIDs         map[messaging.ID]struct{} // ids of the stored results

	receipts receiptState // SMS parts, early receipts and chat sequence numbers

	webhooks webhookRows
	outbox   outbox
	inbound  inboundState
	optOuts  map[optOutKey]optout.OptOut
	keywords map[messaging.ID]optout.Keywords
	idem     map[idemKey]*idempotency.Record
	routing  routingState
}

// company is a company with its current API key hash and pending count.
type company struct {
	c       messaging.Company
	pending int
	// drain counts the messages that left pending lately.
	drain drainBuckets
}

// drainBucket is the width of the buckets of drainBuckets.
const drainBucket = 10 * time.Second

// drainBuckets counts drained pending messages in the current bucket of
// drainBucket and the one before.
type drainBuckets struct {
	bucket    int64
	cur, prev int
}

// release takes n (>= 0) messages off the company's pending count, counted
// as drained at now.
func (co *company) release(n int, now time.Time) {
	co.pending -= n
	b := now.Unix() / int64(drainBucket/time.Second)
	d := &co.drain
	switch d.bucket {
	case b:
	case b - 1:
		d.prev, d.cur = d.cur, 0
	default:
		d.prev, d.cur = 0, 0
	}
	d.bucket = b
	d.cur += max(0, n)
}

// campaignRow is a campaign with the ids of its messages, and how far
// retention has purged them.
type campaignRow struct {
	c        messaging.Campaign
	messages []messaging.ID
	purge    purgeState
}

// purgeState is how far retention has purged a campaign.
type purgeState uint8

const (
	notPurged purgeState = iota
	purging
	purged
)

// lookupKey indexes a company's rows by a string value.
type lookupKey struct {
	company messaging.ID
	value   string
}

// idList is the ids of the messages under one index key. Most keys have
// one message: it is held inline, without an allocation.
type idList struct {
	one  messaging.ID
	more []messaging.ID
}

// index finds a company's messages by a string value: company -> value
// -> ids.
type index map[messaging.ID]map[string]idList

// of returns the company's part of the index, created when missing.
func (x index) of(companyID messaging.ID) map[string]idList {
	m := x[companyID]
	if m == nil {
		m = map[string]idList{}
		x[companyID] = m
	}
	return m
}

// add records id under value v of one company's index part.
func add(part map[string]idList, v string, id messaging.ID) {
	l, ok := part[v]
	if !ok {
		part[v] = idList{one: id}
		return
	}
	l.more = append(l.more, id)
	part[v] = l
}

// get returns the ids under the company's value v.
func (x index) get(companyID messaging.ID, v string) []messaging.ID {
	l, ok := x[companyID][v]
	if !ok {
		return nil
	}
	return append([]messaging.ID{l.one}, l.more...)
}

// remove drops the ids in gone from the company's value v.
func (x index) remove(companyID messaging.ID, v string, gone map[messaging.ID]struct{}) {
	var left []messaging.ID
	for _, id := range x.get(companyID, v) {
		if _, ok := gone[id]; !ok {
			left = append(left, id)
		}
	}
	part := x[companyID]
	if len(left) == 0 {
		delete(part, v)
		return
	}
	part[v] = idList{one: left[0], more: left[1:]}
}

// New returns an empty store.
func New() *Store {
	return &Store{
		companies:         map[messaging.ID]*company{},
		apiKeys:           map[string]*apiKey{},
		senders:           map[int64]messaging.SMSSender{},
		chats:             map[int64]messaging.ChatService{},
		contacts:          map[contactKey]time.Time{},
		replays:           map[string]time.Time{},
		templates:         map[messaging.ID]*messaging.Template{},
		templateNames:     map[lookupKey]messaging.ID{},
		campaigns:         map[messaging.ID]*campaignRow{},
		messages:          map[messaging.ID]*messaging.Message{},
		byPhone:           index{},
		byExternal:        index{},
		sending:           map[messaging.ID]string{},
		claimers:          map[string]time.Time{},
		unconfirmed:       map[messaging.ID]struct{}{},
		due:               map[messaging.Channel]*dueHeap{},
		results:           map[messaging.ID]*messaging.SurveyResult{},
		resultsByCampaign: map[messaging.ID][]*messaging.SurveyResult{},
		resultIDs:         map[messaging.ID]struct{}{},
		outbox:            outbox{ids: messaging.NewIDGenerator(time.Now)},
		idem:              map[idemKey]*idempotency.Record{},
	}
}

// lock takes the store's mutex unless ctx is already done.
func (s *Store) lock(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore %s: %w", op, err)
	}
	s.mu.Lock()
	return nil
}

// apiKey is a stored API key: its description and hash.
type apiKey struct {
	k    messaging.APIKey
	hash string
}

// dueEntry is a Pending message of an InProgress campaign waiting in a
// channel's heap. Entries are checked when popped: one whose message has
// moved on since (claimed, failed, deleted, re-dated) is dropped.
type dueEntry struct {
	bulk bool // of a visible bulk campaign (a direct send's goes first, with the transactional ones)
	due  time.Time
	id   messaging.ID
}

// dueHeap orders entries of transactional campaigns and direct sends
// before those of visible bulk campaigns, then by due time, then id:
// oldest first.
type dueHeap []dueEntry

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if h[i].bulk != h[j].bulk {
		return !h[i].bulk
	}
	if c := h[i].due.Compare(h[j].due); c != 0 {
		return c < 0
	}
	return bytes.Compare(h[i].id[:], h[j].id[:]) < 0
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)   { *h = append(*h, x.(dueEntry)) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// pushDue queues m for claiming.
func (s *Store) pushDue(m *messaging.Message) {
	h := s.due[m.Channel]
	if h == nil {
		h = &dueHeap{}
		s.due[m.Channel] = h
	}
	cr := s.campaigns[m.CampaignID]
	heap.Push(h, dueEntry{bulk: cr != nil && cr.c.Mode == messaging.ModeBulk && !cr.c.Hidden, due: m.DueAt, id: m.ID})
}

// claimable reports whether entry e still stands for a Pending message of
// an InProgress campaign, due when e says.
func (s *Store) claimable(e dueEntry) (*messaging.Message, *campaignRow, bool) {
	m := s.messages[e.id]
	if m == nil || m.Status != messaging.StatusPending || !m.DueAt.Equal(e.due) {
		return nil, nil, false
	}
	cr := s.campaigns[m.CampaignID]
	if cr == nil || !sendable(cr, m) {
		return nil, nil, false
	}
	return m, cr, true
}

// sendable reports whether m of campaign cr may be sent: its campaign is
// InProgress, or it is a fallback SMS of a campaign Completed before a
// chat failure reached it (a late failed callback).
func sendable(cr *campaignRow, m *messaging.Message) bool {
	return cr.c.Status == messaging.CampaignInProgress || (cr.c.Status == messaging.CampaignCompleted && m.IsFallback())
}

// count moves one message of campaign cr from status old to status new in
// its counters (old or new may be empty: no status).
func count(cr *campaignRow, m *messaging.Message, old, new messaging.MessageStatus) {
	counts := countsOf(cr, m)
	if old != "" {
		counts.Add(old, -1)
	}
	if new != "" {
		counts.Add(new, 1)
	}
}

// countsOf returns the counts of cr that count m: its fallback counts for a
// fallback SMS.
func countsOf(cr *campaignRow, m *messaging.Message) *messaging.StatusCounts {
	if m.IsFallback() {
		return &cr.c.FallbackCounts
	}
	return &cr.c.Counts
}

// reserved is the part of a Queuing campaign's Planned not inserted yet.
func reserved(c *messaging.Campaign) int {
	if c.Status != messaging.CampaignQueuing {
		return 0
	}
	return max(0, c.Planned-c.Counts.Total())
}

// pendingOf is what a campaign contributes to its company's pending count.
func pendingOf(c *messaging.Campaign) int {
	return c.Counts.Unsent() + c.FallbackCounts.Unsent() + reserved(c)
}

// page returns the rows of one page of items.
func page[T any](items []T, p messaging.PageRequest) []T {
	if p.Page < 1 {
		p.Page = 1
	}
	if p.PageSize < 1 {
		p.PageSize = messaging.DefaultPageSize
	}
	off := p.Offset()
	if off >= len(items) {
		return nil
	}
	return items[off:min(len(items), off+p.PageSize)]
}

// newestFirst orders by creation time, then id, both descending.
func newestFirst(ca, cb time.Time, ia, ib messaging.ID) int {
	if c := cb.Compare(ca); c != 0 {
		return c
	}
	return bytes.Compare(ib[:], ia[:])
}

// inRange reports whether t is within the inclusive bounds from and to
// (zero: open).
func inRange(t, from, to time.Time) bool {
	return (from.IsZero() || !t.Before(from)) && (to.IsZero() || !t.After(to))
}

func cloneConfig(c *messaging.ChatConfig) *messaging.ChatConfig {
	if c == nil {
		return nil
	}
	v := *c
	v.Items = slices.Clone(c.Items)
	v.Options = slices.Clone(c.Options)
	return &v
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := *t
	return &v
}

func cloneTemplate(t *messaging.Template) messaging.Template {
	v := *t
	v.Config = cloneConfig(t.Config)
	return v
}

func cloneCampaign(c *messaging.Campaign) messaging.Campaign {
	v := *c
	v.Config = cloneConfig(c.Config)
	v.StartedAt = cloneTime(c.StartedAt)
	v.CompletedAt = cloneTime(c.CompletedAt)
	v.CancelledAt = cloneTime(c.CancelledAt)
	v.ScheduledAt = cloneTime(c.ScheduledAt)
	if c.SendWindow != nil {
		w := *c.SendWindow
		v.SendWindow = &w
	}
	return v
}

// copyMessage copies m into dst, sharing nothing with m.
func copyMessage(dst, m *messaging.Message) {
	*dst = *m
	dst.Config = cloneConfig(m.Config)
	dst.SentAt = cloneTime(m.SentAt)
	dst.DeliveredAt = cloneTime(m.DeliveredAt)
	dst.SeenAt = cloneTime(m.SeenAt)
	dst.ExpiresAt = cloneTime(m.ExpiresAt)
}

func cloneMessage(m *messaging.Message) messaging.Message {
	var v messaging.Message
	copyMessage(&v, m)
	return v
}
