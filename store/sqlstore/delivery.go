package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// counterDelta is the change of one campaign's counters.
type counterDelta struct{ counts, fallback messaging.StatusCounts }

// move records that a message of a campaign moved from one status to
// another.
func (d *counterDelta) move(fallback bool, from, to messaging.MessageStatus) {
	c := &d.counts
	if fallback {
		c = &d.fallback
	}
	c.Add(from, -1)
	c.Add(to, 1)
}

// unconfirm adds k to the campaign's count of unconfirmed messages: 1 when
// the receipt timeout marks one, -1 when an unconfirmed message moves on.
func (d *counterDelta) unconfirm(fallback bool, k int) {
	if fallback {
		d.fallback.Unconfirmed += k
	} else {
		d.counts.Unconfirmed += k
	}
}

// countMoves reads rows of (campaign_id, is a fallback SMS), one per
// message an UPDATE moved, records each move in the delta of its campaign
// with move, and returns how many it read. It closes rows.
func countMoves(rows *sql.Rows, deltas map[messaging.ID]*counterDelta, move func(d *counterDelta, fallback bool)) (int, error) {
	defer rows.Close()
	n := 0
	for rows.Next() {
		var campaignID messaging.ID
		var fallback bool
		if err := rows.Scan(&campaignID, &fallback); err != nil {
			return n, err
		}
		d := deltas[campaignID]
		if d == nil {
			d = new(counterDelta)
			deltas[campaignID] = d
		}
		move(d, fallback)
		n++
	}
	if err := rows.Close(); err != nil {
		return n, err
	}
	return n, rows.Err()
}

// applyDeltas adds counter deltas to their campaigns, in id order.
func (s *Store) applyDeltas(ctx context.Context, tx *txn, deltas map[messaging.ID]*counterDelta) error {
	ids := make([]messaging.ID, 0, len(deltas))
	for id := range deltas {
		ids = append(ids, id)
	}
	slicesSortIDs(ids)
	for _, id := range ids {
		if err := s.addCounters(ctx, tx, id, deltas[id].counts, deltas[id].fallback); err != nil {
			return err
		}
	}
	return nil
}

// ClaimDue implements delivery.Store. It picks the campaigns in progress
// that have Pending messages first, then the oldest due messages of each
// one through the claim index, so that messages of campaigns not started
// cost nothing.
func (s *Store) ClaimDue(ctx context.Context, c delivery.Claim) (_ []messaging.Message, err error) {
	defer keepUnavailable(&err)
	if c.Limit <= 0 {
		return nil, nil
	}
	s.prepareQueries(ctx)
	var out []messaging.Message
	var raiseFloors func()
	err = s.write(ctx, "claim due messages", func(tx *txn) error {
		var err error
		raiseFloors = nil
		if s.dialect == dialectPostgres {
			out, err = s.claimPostgres(ctx, tx, c, &raiseFloors)
		} else {
			out, err = s.claimSQLite(ctx, tx, c)
		}
		if err != nil {
			return err
		}
		slices.SortFunc(out, func(a, b messaging.Message) int {
			if c := a.DueAt.Compare(b.DueAt); c != 0 {
				return c
			}
			return compareIDs(a.ID, b.ID)
		})
		deltas := map[messaging.ID]*counterDelta{}
		for _, m := range out {
			d := deltas[m.CampaignID]
			if d == nil {
				d = new(counterDelta)
				deltas[m.CampaignID] = d
			}
			d.move(m.IsFallback(), messaging.StatusPending, messaging.StatusSending)
		}
		return s.applyDeltas(ctx, tx, deltas)
	})
	if err != nil {
		return nil, err
	}
	if raiseFloors != nil {
		raiseFloors()
	}
	return out, nil
}

// claimPostgres claims in one statement: for each campaign in progress
// the oldest due Pending messages of the channel, locked with SKIP LOCKED
// so that concurrent claimers pass each other, then the first of those,
// transactional ones first (within the quotas, when there are).
//
// It sets raise to the raising of the claim floors by what it claimed,
// for the caller to run once the claim is committed.
func (s *Store) claimPostgres(ctx context.Context, tx *txn, c delivery.Claim, raise *func()) ([]messaging.Message, error) {
	plain, quotas := s.pgClaimTexts(c.Channel)
	started := time.Now()
	floors, gen, err := s.floors.current(c.Channel, started)
	if err != nil {
		return nil, err
	}
	run := func(floors string) ([]messaging.Message, error) {
		return s.claimed(ctx, tx, plain,
			floors, s.ts(c.Now), c.Limit, c.Limit, s.ts(c.LeaseUntil), nullText(c.Owner), s.ts(c.Now))
	}
	if len(c.Quotas) > 0 || len(c.CampaignQuotas) > 0 {
		j, err := quotasJSON(c.Quotas, "company")
		if err != nil {
			return nil, fmt.Errorf("claim: quotas: %w", err)
		}
		cj, err := quotasJSON(c.CampaignQuotas, "campaign")
		if err != nil {
			return nil, fmt.Errorf("claim: campaign quotas: %w", err)
		}
		run = func(floors string) ([]messaging.Message, error) {
			return s.claimed(ctx, tx, quotas,
				floors, j, cj, s.ts(c.Now), c.Limit, c.Limit, c.Limit, c.Limit, s.ts(c.LeaseUntil), nullText(c.Owner), s.ts(c.Now))
		}
	}
	out, err := run(floors)
	if err == nil && len(out) == 0 && floors != "[]" {
		// Nothing above the floors: the claim looks below them once
		// before it says nothing is due, for what came back there (a
		// claim of another that rolled back, say).
		out, err = run("[]")
	}
	if err != nil {
		return nil, err
	}
	*raise = func() { s.floors.claimed(c.Channel, gen, out, started) }
	return out, nil
}

// quotasJSON is quotas as the claim statements read them: a JSON array of
// objects naming the id under key, with its quota (at least 0).
func quotasJSON(quotas map[messaging.ID]int, key string) (string, error) {
	rows := make([]map[string]any, 0, len(quotas))
	for id, n := range quotas {
		rows = append(rows, map[string]any{key: id.String(), "quota": max(n, 0)})
	}
	j, err := json.Marshal(rows)
	return string(j), err
}

// pgClaimTexts returns the Postgres claims of a channel (pgClaims), those
// of the two channels prepared.
func (s *Store) pgClaimTexts(channel messaging.Channel) (plain, quotas string) {
	q := s.queries()
	switch channel {
	case messaging.ChannelSMS:
		return q.claimPostgres[0], q.claimPostgresQuotas[0]
	case messaging.ChannelChat:
		return q.claimPostgres[1], q.claimPostgresQuotas[1]
	}
	return pgClaims(channel)
}

// claimed runs a claim statement and returns the messages it claimed.
func (s *Store) claimed(ctx context.Context, tx *txn, q string, args ...any) ([]messaging.Message, error) {
	rows, err := s.rawQuery(ctx, tx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	out, err := collect(rows, scanMessage)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return out, nil
}

// claimSQLite claims under the single writer: no other claim runs at the
// same time.
func (s *Store) claimSQLite(ctx context.Context, tx *txn, c delivery.Claim) ([]messaging.Message, error) {
	channel, now, limit := c.Channel, c.Now, c.Limit
	// A campaign that may be sent from, with the most messages the claim
	// may take from it (its company's quota, or limit).
	type source struct {
		id      []byte
		company messaging.ID
		bulk    bool // a visible bulk campaign: a direct send goes first
		most    int
	}
	var campaigns []source
	// Campaigns in progress, and completed ones that got a fallback SMS
	// after they completed (a late failed chat callback): a completed
	// campaign's only Pending messages are such fallbacks.
	rows, err := s.rawQuery(ctx, tx, sqliteClaimCampaigns)
	if err != nil {
		return nil, fmt.Errorf("claim: campaigns in progress: %w", err)
	}
	for rows.Next() {
		var src source
		var company []byte
		if err := rows.Scan(&src.id, &company, &src.bulk); err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim: campaigns in progress: %w", err)
		}
		copy(src.company[:], company)
		src.most = limit
		if q, capped := c.Quotas[src.company]; capped {
			src.most = min(limit, q)
		}
		var campaignID messaging.ID
		copy(campaignID[:], src.id)
		if q, capped := c.CampaignQuotas[campaignID]; capped {
			src.most = min(src.most, q)
		}
		if src.most > 0 {
			campaigns = append(campaigns, src)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("claim: campaigns in progress: %w", err)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim: campaigns in progress: %w", err)
	}
	if len(campaigns) == 0 {
		return nil, nil
	}
	if len(campaigns) == 1 {
		// One campaign (the usual case): its oldest due messages are the
		// oldest of all, picked and claimed in one statement.
		return s.claimed(ctx, tx, s.queries().claimSQLiteOne, s.ts(c.LeaseUntil), nullText(c.Owner), s.ts(now),
			campaigns[0].id, string(channel), now.UnixMicro(), campaigns[0].most)
	}

	type candidate struct {
		id  []byte
		due int64
		src *source
	}
	var picked []candidate
	st, err := tx.Tx.Tx.PrepareContext(ctx, "SELECT id, due_at FROM messages WHERE campaign_id = ? AND channel = ? "+
		"AND status = 'Pending' AND due_at <= ? ORDER BY due_at, id LIMIT ?")
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	defer st.Close()
	for i := range campaigns {
		src := &campaigns[i]
		rows, err := st.QueryContext(ctx, src.id, string(channel), now.UnixMicro(), src.most)
		if err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
		for rows.Next() {
			c := candidate{src: src}
			if err := rows.Scan(&c.id, &c.due); err != nil {
				rows.Close()
				return nil, fmt.Errorf("claim: %w", err)
			}
			picked = append(picked, c)
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
	}
	if len(picked) == 0 {
		return nil, nil
	}
	// Transactional first, then the oldest; a capped company's messages
	// up to its quota.
	slices.SortFunc(picked, func(a, b candidate) int {
		return cmp.Or(compareBool(a.src.bulk, b.src.bulk), cmp.Compare(a.due, b.due), strings.Compare(string(a.id), string(b.id)))
	})
	var taken map[messaging.ID]int
	ids := make([]messaging.ID, 0, min(len(picked), limit))
	for _, p := range picked {
		if len(ids) == limit {
			break
		}
		if q, capped := c.Quotas[p.src.company]; capped {
			if taken[p.src.company] >= q {
				continue
			}
			if taken == nil {
				taken = map[messaging.ID]int{}
			}
			taken[p.src.company]++
		}
		var id messaging.ID
		copy(id[:], p.id)
		ids = append(ids, id)
	}
	return s.claimed(ctx, tx, s.queries().claimSQLite, s.ts(c.LeaseUntil), nullText(c.Owner), s.ts(now), s.jsonIDs(ids))
}

// sqliteClaimCampaigns reads the campaigns a claim on SQLite may take
// messages from: those in progress, and completed ones that got a
// fallback SMS after they completed (a late failed chat callback).
const sqliteClaimCampaigns = "SELECT id, company_id, mode = 'Bulk' AND NOT hidden FROM campaigns WHERE (status = 'InProgress' AND pending + fb_pending > 0) " +
	"OR (status = 'Completed' AND fb_pending > 0)"

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// messageState is what ApplyUpdates knows of a message while it applies
// a batch.
type messageState struct {
	campaignID  messaging.ID
	fallback    bool
	unconfirmed bool // Sent and past the receipt timeout
	was         messaging.MessageStatus
	wasSentAt   *time.Time // sent_at as read
	changed     bool
	// trail lists the statuses the message moved to in this batch, in
	// order: each is reported by a message.status event. The first moves
	// are kept in place (a batch rarely moves a message more than twice).
	trail      []move
	trailSpace [2]move
	// desc is what the data of the message's message.status events needs
	// besides, as read; nil when it was not read (the events are then
	// written with their status only).
	desc *describedState
	// MessageState holds the company, status, channel and sent_at read, and what
	// the updates applied changed: the times and texts left nil or empty
	// keep their stored values.
	delivery.MessageState
}

// apply applies u to the state as at, recording in trail the status it
// moved to, if it moved.
func (st *messageState) apply(u delivery.StatusUpdate, at time.Time) bool {
	before := st.Status
	if !u.Apply(&st.MessageState, at) {
		return false
	}
	if st.Status != before {
		if st.trail == nil {
			st.trail = st.trailSpace[:0]
		}
		st.trail = append(st.trail, move{st.Status, at})
	}
	return true
}

// describedState is what a message's message.status events need to
// describe it, beyond the state a status update reads: the columns that
// never change, and the stored values of those an update may set.
type describedState struct {
	phone, externalUserID string
	fallbackFor           messaging.ID
	createdAt             time.Time
	deliveredAt, seenAt   *time.Time
	details, smsErrorCode string
}

// message returns the message st stands for, as it is once the batch
// applied, at status: what webhook.MessageStatusEvent reads of it. A value
// the batch did not set is the stored one.
func (st *messageState) message(id messaging.ID, status messaging.MessageStatus) messaging.Message {
	d := st.desc
	m := messaging.Message{ID: id, CompanyID: st.CompanyID, CampaignID: st.campaignID, Channel: st.Channel, Phone: d.phone,
		ExternalUserID: d.externalUserID, FallbackFor: d.fallbackFor, Status: status, CreatedAt: d.createdAt, SentAt: st.SentAt,
		DeliveredAt: cmp.Or(st.DeliveredAt, d.deliveredAt), SeenAt: cmp.Or(st.SeenAt, d.seenAt),
		Details: cmp.Or(st.Details, d.details), SMSErrorCode: cmp.Or(st.SMSErrorCode, d.smsErrorCode)}
	return m
}

// move is a status a message moved to, and when.
type move struct {
	status messaging.MessageStatus
	at     time.Time
}

// ApplyUpdates implements delivery.Store: updates apply in order, each
// seeing the effect of the previous ones; an update of an unknown message
// is not applied. The parts of the SMS recorded Sent are written after the
// updates, and the receipts that were waiting for them applied then.
func (s *Store) ApplyUpdates(ctx context.Context, updates []delivery.StatusUpdate) (_ []bool, err error) {
	defer keepUnavailable(&err)
	br, err := s.ApplyBatch(ctx, updates, nil, time.Time{})
	return br.Applied, err
}

// applyUpdates applies updates to the locked states of their messages,
// and returns the parts of the SMS that went Sent, for recordParts.
func applyUpdates(states map[messaging.ID]*messageState, updates []delivery.StatusUpdate, applied []bool) []sentParts {
	var sent []sentParts
	for i, u := range updates {
		st := states[u.MessageID]
		if st == nil || !st.apply(u, u.At) {
			continue
		}
		applied[i], st.changed = true, true
		if u.Status == messaging.StatusSent && len(u.PartIDs) > 0 {
			sent = append(sent, sentParts{message: u.MessageID, ids: u.PartIDs, at: u.At, update: i})
		}
	}
	return sent
}

// cancelRetries keeps the rule that a message of a cancelled campaign
// never goes back to Pending: nothing would send it again, and it would
// hold its company's pending capacity. The messages the batch moved to
// Pending (a retry, a withdrawal) whose campaign is cancelled fail
// CANCELLED instead, as the cancel failed the campaign's other waiting
// messages, and the updates that moved them are reported not applied.
//
// It costs nothing to a batch that moves no message to Pending. Otherwise
// it reads the campaigns of the batch's changed messages, once all the
// messages are locked; on Postgres it locks them, in id order, and reads
// their latest versions. CancelCampaign locks its campaign first, so a
// cancel either committed before this read and is seen, or waits for
// this transaction to commit and then finds the message Pending and fails
// it itself.
func (s *Store) cancelRetries(ctx context.Context, tx *txn, states map[messaging.ID]*messageState, updates []delivery.StatusUpdate, applied []bool) error {
	var campaigns []messaging.ID
	retried := false
	for _, st := range states {
		if st.changed {
			campaigns = append(campaigns, st.campaignID)
			retried = retried || st.Status == messaging.StatusPending
		}
	}
	if !retried {
		return nil
	}
	slicesSortIDs(campaigns)
	campaigns = slices.Compact(campaigns)
	q := "SELECT id, cancelled_at IS NOT NULL FROM campaigns WHERE " + s.jsonIDsIn("id") + " ORDER BY id"
	if s.dialect == dialectPostgres {
		q += " FOR UPDATE"
	}
	rows, err := s.rawQuery(ctx, tx, q, s.jsonIDs(campaigns))
	if err != nil {
		return fmt.Errorf("read cancelled campaigns: %w", err)
	}
	cancelled := map[messaging.ID]bool{}
	for rows.Next() {
		var id messaging.ID
		var c bool
		if err := rows.Scan(&id, &c); err != nil {
			rows.Close()
			return fmt.Errorf("read cancelled campaigns: %w", err)
		}
		if c {
			cancelled[id] = true
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("read cancelled campaigns: %w", err)
	}
	if len(cancelled) == 0 {
		return nil
	}
	failed := map[messaging.ID]bool{}
	for id, st := range states {
		if !st.changed || st.Status != messaging.StatusPending || !cancelled[st.campaignID] {
			continue
		}
		// The move to Pending is not written, nor is its event: the
		// message fails from the status it had.
		at := st.UpdatedAt
		if n := len(st.trail); n > 0 && st.trail[n-1].status == messaging.StatusPending {
			at = st.trail[n-1].at
			st.trail = st.trail[:n-1]
		}
		st.DueAt = nil
		st.apply(delivery.StatusUpdate{MessageID: id, Status: messaging.StatusFailed, At: at, Details: campaign.DetailsCancelled}, at)
		failed[id] = true
	}
	for i, u := range updates {
		if u.Status == messaging.StatusPending && failed[u.MessageID] {
			applied[i] = false
		}
	}
	return nil
}

// lockMessages reads the statuses of the messages with the given sorted
// ids, locking their rows on Postgres.
func (s *Store) lockMessages(ctx context.Context, tx *txn, ids []messaging.ID) (map[messaging.ID]*messageState, error) {
	q, described := s.queries().lockMessages, s.describeEvents.Load()
	if described {
		q = s.queries().lockDescribed
	}
	states := make(map[messaging.ID]*messageState, len(ids))
	for chunk := range slices.Chunk(ids, 1000) {
		rows, err := s.rawQuery(ctx, tx, q, append([]any{s.jsonIDs(chunk)}, s.idBounds(chunk)...)...)
		if err != nil {
			return nil, fmt.Errorf("read message statuses: %w", err)
		}
		for rows.Next() {
			var id messaging.ID
			st := new(messageState)
			dst := []any{&id, &st.CompanyID, &st.campaignID, &st.fallback, &st.Status, timePtrDst{&st.SentAt}, &st.Channel, &st.unconfirmed}
			if described {
				d := new(describedState)
				st.desc = d
				dst = append(dst, &d.phone, &d.externalUserID, &d.fallbackFor, timeDst{&d.createdAt}, timePtrDst{&d.deliveredAt},
					timePtrDst{&d.seenAt}, &d.details, &d.smsErrorCode)
			}
			if err := rows.Scan(dst...); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read message statuses: %w", err)
			}
			st.was, st.wasSentAt = st.Status, st.SentAt
			states[id] = st
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("read message statuses: %w", err)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read message statuses: %w", err)
		}
	}
	return states, nil
}

// writeStates writes the changed messages in bulk, their message.status
// events for the companies that subscribe to them, and moves the counters
// of their campaigns and companies. Messages are written in groups by the
// columns their updates set (see stateColumns), each group with the
// statement writing those columns only.
func (s *Store) writeStates(ctx context.Context, tx *txn, states map[messaging.ID]*messageState) error {
	ids := make([]messaging.ID, 0, len(states))
	for id, st := range states {
		if st.changed {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slicesSortIDs(ids)
	deltas := map[messaging.ID]*counterDelta{}
	pending := map[messaging.ID]int{}
	groups := map[stateColumns][]messaging.ID{}
	var moved []messaging.ID       // whose trail has events
	var back map[messaging.ID]bool // campaigns with messages back to Pending
	for _, id := range ids {
		st := states[id]
		if st.Status == messaging.StatusPending && s.dialect == dialectPostgres {
			if back == nil {
				back = map[messaging.ID]bool{}
			}
			back[st.campaignID] = true
		}
		cols := st.columns()
		groups[cols] = append(groups[cols], id)
		if slices.ContainsFunc(st.trail, func(m move) bool { return m.status != messaging.StatusSending }) {
			moved = append(moved, id)
		}
		if st.was != st.Status {
			d := deltas[st.campaignID]
			if d == nil {
				d = new(counterDelta)
				deltas[st.campaignID] = d
			}
			d.move(st.fallback, st.was, st.Status)
			if st.unconfirmed && st.was == messaging.StatusSent {
				d.unconfirm(st.fallback, -1)
			}
			pending[st.CompanyID] += unsent(st.Status) - unsent(st.was)
		}
	}
	for _, cols := range slices.Sorted(maps.Keys(groups)) {
		q, list := s.queries().writeStates[cols], cols.list()
		for chunk := range slices.Chunk(groups[cols], 1000) {
			rows := s.newJSONRows(len(chunk))
			for _, id := range chunk {
				st := states[id]
				r := rows.row().id(id).text(string(st.Status)).ts(st.UpdatedAt)
				for _, c := range list {
					switch c {
					case setSentAt:
						r.tsPtr(st.SentAt)
					case setDeliveredAt:
						r.tsPtr(st.DeliveredAt)
					case setSeenAt:
						r.tsPtr(st.SeenAt)
					case setDueAt:
						r.tsPtr(st.DueAt)
					case setProviderMessageID:
						r.text(st.ProviderMessageID)
					case setDetails:
						r.text(st.Details)
					case setSMSErrorCode:
						r.text(st.SMSErrorCode)
					case setRoute:
						r.text(st.Route)
					}
				}
			}
			if _, err := s.rawExec(ctx, tx, q, append([]any{rows.String()}, s.idBounds(chunk)...)...); err != nil {
				return fmt.Errorf("update messages: %w", err)
			}
		}
	}
	if err := s.emitMessageStatus(ctx, tx, states, moved); err != nil {
		return err
	}
	// Dropped now, and again once the write is committed: a claim that
	// read the floors in between would miss the messages back below them.
	s.floors.drop(back)
	tx.afterCommit(func() { s.floors.drop(back) })
	return s.moveCounters(ctx, tx, deltas, pending)
}

// stateColumns is a set of the message columns a status update may set
// besides status and updated_at, one bit per column.
type stateColumns uint16

// The columns of stateColumns, in the order of their bits.
const (
	setSentAt stateColumns = 1 << iota
	setDeliveredAt
	setSeenAt
	setDueAt
	setProviderMessageID
	setDetails
	setSMSErrorCode
	setRoute
	setAll = setRoute<<1 - 1
)

// stateColumnNames are the names of the columns of stateColumns, bit by bit.
var stateColumnNames = [...]string{"sent_at", "delivered_at", "seen_at", "due_at", "provider_message_id", "details", "sms_error_code", "route"}

// list returns the columns of c, in bit order.
func (c stateColumns) list() []stateColumns {
	var out []stateColumns
	for b := setSentAt; b <= setRoute; b <<= 1 {
		if c&b != 0 {
			out = append(out, b)
		}
	}
	return out
}

// columns returns the columns the applied updates set: those holding a
// value now that was not read (lockMessages reads sent_at only). Writing
// only these, rather than every column with COALESCE, spares SQLite most
// of the work of reading the batch and of the update.
func (st *messageState) columns() stateColumns {
	var c stateColumns
	if st.SentAt != nil && (st.wasSentAt == nil || !st.SentAt.Equal(*st.wasSentAt)) {
		c |= setSentAt
	}
	if st.DeliveredAt != nil {
		c |= setDeliveredAt
	}
	if st.SeenAt != nil {
		c |= setSeenAt
	}
	if st.DueAt != nil {
		c |= setDueAt
	}
	if st.ProviderMessageID != "" {
		c |= setProviderMessageID
	}
	if st.Details != "" {
		c |= setDetails
	}
	if st.SMSErrorCode != "" {
		c |= setSMSErrorCode
	}
	if st.Route != "" {
		c |= setRoute
	}
	return c
}

// moveCounters adds counter deltas to their campaigns, then pending
// deltas to their companies, each in id order. On Postgres the updates go
// in one round trip, as one text of several statements (its only values
// are ids and integers); on SQLite each runs on its own, in process.
func (s *Store) moveCounters(ctx context.Context, tx *txn, deltas map[messaging.ID]*counterDelta, pending map[messaging.ID]int) error {
	if s.dialect != dialectPostgres {
		if err := s.applyDeltas(ctx, tx, deltas); err != nil {
			return err
		}
		return s.addPending(ctx, tx, pending)
	}
	var q strings.Builder
	var args []any
	ids := slices.SortedFunc(maps.Keys(deltas), compareIDs)
	for _, id := range ids {
		set, a := counterSets(deltas[id].counts, deltas[id].fallback)
		if len(set) == 0 {
			continue
		}
		q.WriteString("UPDATE campaigns SET " + strings.Join(set, ", ") + " WHERE id = ?;")
		args = append(append(args, a...), s.id(id))
	}
	ids = slices.SortedFunc(maps.Keys(pending), compareIDs)
	now := time.Now()
	for _, id := range ids {
		if pending[id] != 0 {
			q.WriteString("UPDATE companies SET pending_count = pending_count + ?, " + drainSet + " WHERE id = ?;")
			args = append(append(append(args, pending[id]), drainArgs(pending[id], now)...), s.id(id))
		}
	}
	if q.Len() == 0 {
		return nil
	}
	if _, err := tx.Tx.Tx.ExecContext(ctx, s.placeholders(q.String()), args...); err != nil {
		return fmt.Errorf("update campaign counters and pending counts: %w", err)
	}
	return nil
}

// unsent is 1 for a status that counts as pending, else 0.
func unsent(s messaging.MessageStatus) int {
	if s.Unsent() {
		return 1
	}
	return 0
}

// nullText is s, or NULL when s is empty.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Heartbeat implements delivery.Store.
func (s *Store) Heartbeat(ctx context.Context, owner string, at time.Time) (err error) {
	defer keepUnavailable(&err)
	return s.write(ctx, "write the claim heartbeat", func(tx *txn) error {
		_, err := s.rawExec(ctx, tx, "INSERT INTO claimers (name, heartbeat_at) VALUES (?, ?) "+
			"ON CONFLICT (name) DO UPDATE SET heartbeat_at = excluded.heartbeat_at", owner, s.ts(at))
		return err
	})
}

// ForgetClaimer implements delivery.Store.
func (s *Store) ForgetClaimer(ctx context.Context, owner string) (err error) {
	defer keepUnavailable(&err)
	return s.write(ctx, "remove the claim heartbeat", func(tx *txn) error {
		_, err := s.rawExec(ctx, tx, "DELETE FROM claimers WHERE name = ?", owner)
		return err
	})
}

// RecoverClaims implements delivery.Store: Sending messages whose lease
// ended strictly before r.Now, whose owner's heartbeat is older than
// r.StaleBefore (or missing), held by r.Owner, or of a claim of
// r.Unknown (its owner and its lease) go back to Pending,
// keeping their due time; those of a cancelled campaign fail CANCELLED
// instead, as its other waiting messages did. The Sending messages are
// few (those in flight), and found through their partial index.
func (s *Store) RecoverClaims(ctx context.Context, r delivery.Recovery) (_ int, err error) {
	defer keepUnavailable(&err)
	var n int
	cond := "lease_until < ?"
	args := []any{s.ts(r.Now)}
	if !r.StaleBefore.IsZero() {
		cond += " OR (claimed_by IS NOT NULL AND claimed_by <> ? AND claimed_by NOT IN (SELECT name FROM claimers WHERE heartbeat_at >= ?))"
		args = append(args, r.Self, s.ts(r.StaleBefore))
	}
	if r.Owner != "" {
		cond += " OR claimed_by = ?"
		args = append(args, r.Owner)
	}
	for _, c := range r.Unknown {
		if c.Owner == "" {
			cond += " OR (claimed_by IS NULL AND lease_until = ?)"
			args = append(args, s.ts(c.LeaseUntil))
			continue
		}
		cond += " OR (claimed_by = ? AND lease_until = ?)"
		args = append(args, c.Owner, s.ts(c.LeaseUntil))
	}
	const cancelled = "EXISTS (SELECT 1 FROM campaigns c WHERE c.id = messages.campaign_id AND c.cancelled_at IS NOT NULL)"
	err = s.write(ctx, "recover ended claims", func(tx *txn) error {
		var rows *sql.Rows
		var err error
		if s.dialect == dialectPostgres {
			// The claims are read first, each with its attempts, and a
			// message moves only if it still holds the claim read: a
			// claim is one attempt. Under READ COMMITTED, a message
			// taken back and claimed again by a live process after
			// this statement began is checked again against its new
			// row, but against the heartbeats read at the start: its
			// new claimer, restarted under the same name, would look
			// dead. Its attempts tell the claim is another one.
			rows, err = s.rawQuery(ctx, tx, "WITH ended AS (SELECT id, attempts FROM messages "+
				"WHERE status = 'Sending' AND ("+cond+") AND NOT "+cancelled+") "+
				"UPDATE messages SET status = 'Pending', updated_at = ? FROM ended "+
				"WHERE messages.id = ended.id AND messages.status = 'Sending' AND messages.attempts = ended.attempts "+
				"RETURNING messages.campaign_id, messages.fallback_for IS NOT NULL",
				append(slices.Clone(args), s.ts(r.Now))...)
		} else {
			rows, err = s.rawQuery(ctx, tx, "UPDATE messages SET status = 'Pending', updated_at = ? "+
				"WHERE status = 'Sending' AND ("+cond+") AND NOT "+cancelled+" RETURNING campaign_id, fallback_for IS NOT NULL",
				append([]any{s.ts(r.Now)}, args...)...)
		}
		if err != nil {
			return fmt.Errorf("recover: %w", err)
		}
		deltas := map[messaging.ID]*counterDelta{}
		n, err = countMoves(rows, deltas, func(d *counterDelta, fallback bool) {
			d.move(fallback, messaging.StatusSending, messaging.StatusPending)
		})
		if err != nil {
			return fmt.Errorf("recover: %w", err)
		}
		if err := s.applyDeltas(ctx, tx, deltas); err != nil {
			return err
		}
		failed, err := s.failCancelledClaims(ctx, tx, r.Now, "status = 'Sending' AND ("+cond+") AND "+cancelled, args)
		n += failed
		return err
	})
	if n > 0 || err != nil {
		s.floors.dropAll()
	}
	return n, err
}

// failCancelledClaims fails, CANCELLED, the Sending messages matching
// where (messages of cancelled campaigns whose claim ended), with their
// counters, pending counts and events, and returns how many it failed.
func (s *Store) failCancelledClaims(ctx context.Context, tx *txn, now time.Time, where string, args []any) (int, error) {
	rows, err := s.rawQuery(ctx, tx, "SELECT id FROM messages WHERE "+where, args...)
	if err != nil {
		return 0, fmt.Errorf("recover: cancelled campaigns' claims: %w", err)
	}
	var ids []messaging.ID
	for rows.Next() {
		var id messaging.ID
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("recover: cancelled campaigns' claims: %w", err)
		}
		ids = append(ids, id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, fmt.Errorf("recover: cancelled campaigns' claims: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	slicesSortIDs(ids)
	states, err := s.lockMessages(ctx, tx, ids)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		// A message whose result was recorded meanwhile is left as it is.
		if st := states[id]; st != nil && st.Status == messaging.StatusSending && st.apply(delivery.StatusUpdate{MessageID: id,
			Status: messaging.StatusFailed, At: now, Details: campaign.DetailsCancelled}, now) {
			st.changed = true
			n++
		}
	}
	return n, s.writeStates(ctx, tx, states)
}

// drainedCampaigns is the condition of the InProgress bulk campaigns that
// CompleteDrained completes; the partial index of InProgress campaigns
// finds them.
const drainedCampaigns = "status = 'InProgress' AND mode = 'Bulk' AND pending + sending + fb_pending + fb_sending = 0"

// CompleteDrained implements delivery.Store, from the campaigns' counters.
// It looks first without taking the writer: most calls find nothing.
func (s *Store) CompleteDrained(ctx context.Context, now time.Time) (_ []delivery.Completed, err error) {
	defer keepUnavailable(&err)
	var one int
	err = s.read.QueryRowContext(ctx, "SELECT 1 FROM campaigns WHERE "+drainedCampaigns+" LIMIT 1").Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("complete drained campaigns: %w", err)
	}
	var done []delivery.Completed
	err = s.write(ctx, "complete drained campaigns", func(tx *txn) error {
		done = done[:0]
		rows, err := tx.QueryContext(ctx, "UPDATE campaigns SET status = 'Completed', completed_at = ?, updated_at = ? "+
			"WHERE "+drainedCampaigns+" RETURNING id, company_id, name", s.ts(now), s.ts(now))
		if err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		var ids, companies []messaging.ID
		for rows.Next() {
			var c delivery.Completed
			if err := rows.Scan(&c.ID, &c.CompanyID, &c.Name); err != nil {
				rows.Close()
				return fmt.Errorf("complete: %w", err)
			}
			done = append(done, c)
			ids, companies = append(ids, c.ID), append(companies, c.CompanyID)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		return s.emitCampaignStatus(ctx, tx, ids, slices.Compact(slices.SortedFunc(slices.Values(companies), compareIDs)), now)
	})
	if err != nil {
		return nil, err
	}
	return done, nil
}

// Backlog implements delivery.Store, from the counters of the InProgress
// campaigns (their partial index keeps the read small).
func (s *Store) Backlog(ctx context.Context) (_ map[messaging.Channel]int, err error) {
	defer keepUnavailable(&err)
	rows, err := s.read.QueryContext(ctx, "SELECT channel, COALESCE(SUM(pending + sending), 0), COALESCE(SUM(fb_pending + fb_sending), 0) "+
		"FROM campaigns WHERE status = 'InProgress' GROUP BY channel")
	if err != nil {
		return nil, fmt.Errorf("read the backlog: %w", err)
	}
	defer rows.Close()
	out := map[messaging.Channel]int{}
	for rows.Next() {
		var ch messaging.Channel
		var own, fallback int
		if err := rows.Scan(&ch, &own, &fallback); err != nil {
			return nil, fmt.Errorf("read the backlog: %w", err)
		}
		out[ch] += own
		out[messaging.ChannelSMS] += fallback
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the backlog: %w", err)
	}
	return out, nil
}

// HaltedCampaigns implements delivery.Store, by primary key.
func (s *Store) HaltedCampaigns(ctx context.Context, ids []messaging.ID) (_ map[messaging.ID]bool, err error) {
	defer keepUnavailable(&err)
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.read.QueryContext(ctx, "SELECT id, cancelled_at IS NOT NULL FROM campaigns WHERE "+s.jsonIDsIn("id")+
		" AND (status = 'Paused' OR cancelled_at IS NOT NULL)", s.jsonIDs(ids))
	if err != nil {
		return nil, fmt.Errorf("read halted campaigns: %w", err)
	}
	defer rows.Close()
	out := map[messaging.ID]bool{}
	for rows.Next() {
		var id messaging.ID
		var cancelled bool
		if err := rows.Scan(&id, &cancelled); err != nil {
			return nil, fmt.Errorf("read halted campaigns: %w", err)
		}
		out[id] = cancelled
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read halted campaigns: %w", err)
	}
	return out, nil
}

// Features implements delivery.Store.
func (s *Store) Features() delivery.Features {
	return delivery.Features{WriteConcurrency: s.WriteConcurrency()}
}

// WriteConcurrency is how many write transactions are worth running at
// once: 2 on Postgres,
// whose transactions run side by side; 1 on SQLite, whose one writer
// takes them in turn.
func (s *Store) WriteConcurrency() int {
	if s.dialect == dialectPostgres {
		return 2
	}
	return 1
}
