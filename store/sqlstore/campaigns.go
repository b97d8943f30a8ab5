package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

const campaignColumns = "id, company_id, name, description, channel, mode, status, hidden, template_id, template_name, " +
	"message_type, config, sms_sender_id, chat_service_id, fallback_sender_id, planned, " + counterColumns + ", " +
	"failure_reason, created_at, updated_at, started_at, completed_at, cancelled_at, scheduled_at, valid_for, " +
	"window_from, window_to, window_tz"

// counterColumns are a campaign's counters: its messages by status, then
// its fallback SMS by status, in the order of messaging.MessageStatuses,
// then the unconfirmed ones of each.
const counterColumns = "pending, sending, sent, delivered, seen, failed, fb_pending, fb_sending, fb_sent, fb_delivered, fb_seen, fb_failed, " +
	"unconfirmed, fb_unconfirmed"

// counterColumn returns the column counting status s.
func counterColumn(s messaging.MessageStatus, fallback bool) string {
	name := strings.ToLower(string(s))
	if fallback {
		return "fb_" + name
	}
	return name
}

// counterDsts returns scan targets for counterColumns.
func counterDsts(c, fb *messaging.StatusCounts) []any {
	return []any{&c.Pending, &c.Sending, &c.Sent, &c.Delivered, &c.Seen, &c.Failed,
		&fb.Pending, &fb.Sending, &fb.Sent, &fb.Delivered, &fb.Seen, &fb.Failed, &c.Unconfirmed, &fb.Unconfirmed}
}

func scanCampaign(row interface{ Scan(...any) error }) (messaging.Campaign, error) {
	var c messaging.Campaign
	dst := []any{&c.ID, &c.CompanyID, &c.Name, &c.Description, &c.Channel, &c.Mode, &c.Status, &c.Hidden, &c.TemplateID,
		&c.TemplateName, &c.MessageType, configDst{&c.Config}, &c.SMSSenderID, &c.ChatServiceID, &c.FallbackSender, &c.Planned}
	dst = append(dst, counterDsts(&c.Counts, &c.FallbackCounts)...)
	dst = append(dst, &c.FailureReason, timeDst{&c.CreatedAt}, timeDst{&c.UpdatedAt}, timePtrDst{&c.StartedAt}, timePtrDst{&c.CompletedAt},
		timePtrDst{&c.CancelledAt}, timePtrDst{&c.ScheduledAt}, secondsDst{&c.ValidFor})
	var from, to sql.NullInt64
	var tz string
	dst = append(dst, &from, &to, &tz)
	err := row.Scan(dst...)
	if from.Valid && to.Valid {
		c.SendWindow = &messaging.SendWindow{From: int(from.Int64), To: int(to.Int64), TimeZone: tz}
	}
	return c, err
}

// campaignState is what the pending count needs to know of a campaign.
type campaignState struct {
	id, companyID    messaging.ID
	status           messaging.CampaignStatus
	planned          int
	counts, fallback messaging.StatusCounts
	cancelled        bool // the campaign was cancelled
}

// reserved is the part of a Queuing campaign's Planned not inserted yet.
func (c *campaignState) reserved() int {
	if c.status != messaging.CampaignQueuing {
		return 0
	}
	return max(0, c.planned-c.counts.Total())
}

// pending is what the campaign adds to its company's pending count: its
// Pending and Sending messages (fallback SMS included) and its
// reservation.
func (c *campaignState) pending() int {
	return c.counts.Unsent() + c.fallback.Unsent() + c.reserved()
}

// lockCampaigns reads the state of the given campaigns, locking their rows
// on Postgres, in id order. Unknown ids are left out.
func (s *Store) lockCampaigns(ctx context.Context, tx *txn, ids []messaging.ID) (map[messaging.ID]*campaignState, error) {
	slices.SortFunc(ids, compareIDs)
	ids = slices.Compact(ids)
	out := make(map[messaging.ID]*campaignState, len(ids))
	rows, err := s.rawQuery(ctx, tx, s.admitStatements().lockCampaigns, s.jsonIDs(ids))
	if err != nil {
		return nil, fmt.Errorf("lock campaigns: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		c := new(campaignState)
		dst := append(append([]any{&c.id, &c.companyID, &c.status, &c.planned}, counterDsts(&c.counts, &c.fallback)...), &c.cancelled)
		if err := rows.Scan(dst...); err != nil {
			return nil, fmt.Errorf("lock campaigns: %w", err)
		}
		out[c.id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lock campaigns: %w", err)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("lock campaigns: %w", err)
	}
	return out, nil
}

// addCounters adds the deltas to a campaign's counters.
func (s *Store) addCounters(ctx context.Context, tx *txn, id messaging.ID, counts, fallback messaging.StatusCounts) error {
	set, args := counterSets(counts, fallback)
	if len(set) == 0 {
		return nil
	}
	args = append(args, s.id(id))
	if _, err := s.rawExec(ctx, tx, "UPDATE campaigns SET "+strings.Join(set, ", ")+" WHERE id = ?", args...); err != nil {
		return fmt.Errorf("update campaign counters: %w", err)
	}
	return nil
}

// counterSets returns the SET clauses ("col = col + ?") and arguments
// adding the non-zero deltas to a campaign's counters.
func counterSets(counts, fallback messaging.StatusCounts) ([]string, []any) {
	var set []string
	var args []any
	for _, st := range messaging.MessageStatuses() {
		for _, fb := range []bool{false, true} {
			d := counts.Of(st)
			if fb {
				d = fallback.Of(st)
			}
			if d != 0 {
				col := counterColumn(st, fb)
				set = append(set, col+" = "+col+" + ?")
				args = append(args, d)
			}
		}
	}
	if d := counts.Unconfirmed; d != 0 {
		set = append(set, "unconfirmed = unconfirmed + ?")
		args = append(args, d)
	}
	if d := fallback.Unconfirmed; d != 0 {
		set = append(set, "fb_unconfirmed = fb_unconfirmed + ?")
		args = append(args, d)
	}
	return set, args
}

// addPending adds the deltas to the companies' pending counts, in id
// order.
func (s *Store) addPending(ctx context.Context, tx *txn, deltas map[messaging.ID]int) error {
	ids := make([]messaging.ID, 0, len(deltas))
	for id, d := range deltas {
		if d != 0 {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, compareIDs)
	now := time.Now()
	for _, id := range ids {
		args := append([]any{deltas[id]}, drainArgs(deltas[id], now)...)
		if _, err := s.rawExec(ctx, tx, s.admitStatements().addPending, append(args, s.id(id))...); err != nil {
			return fmt.Errorf("update pending count: %w", err)
		}
	}
	return nil
}

// drainBucket is the width of the buckets in which a company's drained
// pending messages are counted: the current one and the one before are
// kept (drain_cur, drain_prev), drain_bucket numbering the current one
// (Unix seconds / 10).
const drainBucket = 10 * time.Second

// drainSet moves the drain buckets of a company along with a change of its
// pending count; drainArgs gives its arguments.
const drainSet = "drain_prev = CASE WHEN drain_bucket = ? THEN drain_prev WHEN drain_bucket = ? THEN drain_cur ELSE 0 END, " +
	"drain_cur = CASE WHEN drain_bucket = ? THEN drain_cur ELSE 0 END + ?, drain_bucket = ?"

// drainArgs returns the arguments of drainSet for a pending count change
// of delta at now: a decrease counts as drained.
func drainArgs(delta int, now time.Time) []any {
	b := now.Unix() / int64(drainBucket/time.Second)
	return []any{b, b - 1, b, max(0, -delta), b}
}

// CapacityUse implements campaign.CampaignStore.
func (s *Store) CapacityUse(ctx context.Context, companyID messaging.ID) (_ messaging.CapacityUse, err error) {
	defer keepUnavailable(&err)
	now := time.Now()
	var bucket int64
	var cur, prev int
	err = s.read.QueryRowContext(ctx, "SELECT drain_bucket, drain_cur, drain_prev FROM companies WHERE id = ?", s.id(companyID)).Scan(&bucket, &cur, &prev)
	if errors.Is(err, sql.ErrNoRows) {
		return messaging.CapacityUse{}, messaging.CompanyNotFound(companyID)
	}
	if err != nil {
		return messaging.CapacityUse{}, fmt.Errorf("capacity use: %w", err)
	}
	width := int64(drainBucket / time.Second)
	b := now.Unix() / width
	use := messaging.CapacityUse{Since: time.Unix((b-1)*width, 0), HeldBy: map[messaging.CampaignStatus]int{}}
	switch bucket {
	case b:
		use.Drained = cur + prev
	case b - 1:
		use.Drained = cur
	}
	greatest := "MAX"
	if s.dialect == dialectPostgres {
		greatest = "GREATEST"
	}
	rows, err := s.read.QueryContext(ctx, "SELECT status, SUM(pending + sending + fb_pending + fb_sending + "+
		"CASE WHEN status = 'Queuing' THEN "+greatest+"(0, planned - (pending + sending + sent + delivered + seen + failed)) ELSE 0 END) "+
		"FROM campaigns WHERE company_id = ? AND (pending + sending + fb_pending + fb_sending > 0 OR status = 'Queuing') GROUP BY status", s.id(companyID))
	if err != nil {
		return messaging.CapacityUse{}, fmt.Errorf("capacity use: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return messaging.CapacityUse{}, fmt.Errorf("capacity use: %w", err)
		}
		if n > 0 {
			use.HeldBy[messaging.CampaignStatus(st)] = n
		}
	}
	if err := rows.Err(); err != nil {
		return messaging.CapacityUse{}, fmt.Errorf("capacity use: %w", err)
	}
	return use, nil
}

// admit grows the company's pending count by n when it stays within
// maxPending, and otherwise returns the RateLimited error (requested is
// the count it reports). It returns NotFound for an unknown company.
func (s *Store) admit(ctx context.Context, tx *txn, companyID messaging.ID, n, requested, maxPending int) error {
	if n > 0 {
		var pending int
		err := s.rawQueryRow(ctx, tx, s.admitStatements().admit, n, s.id(companyID), n, maxPending).Scan(&pending)
		if err == nil {
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("admit: %w", err)
		}
	}
	var pending int
	err := s.rawQueryRow(ctx, tx, s.admitStatements().pendingOf, s.id(companyID)).Scan(&pending)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return messaging.CompanyNotFound(companyID)
	case err != nil:
		return fmt.Errorf("admit: %w", err)
	case n > 0:
		return messaging.CapacityExceeded(messaging.Capacity{CurrentPending: pending, RequestedCount: requested, MaxAllowed: maxPending})
	}
	return nil
}

// CreateCampaign implements campaign.CampaignStore. A Queuing campaign
// reserves its Planned messages; one created in any other status reserves
// nothing (the pending count holds reservations of Queuing campaigns only).
func (s *Store) CreateCampaign(ctx context.Context, c *messaging.Campaign, maxPending int) (err error) {
	defer keepUnavailable(&err)
	cfg, err := jsonConfig(c.Config)
	if err != nil {
		return fmt.Errorf("create campaign: %w", err)
	}
	var windowFrom, windowTo any
	windowTZ := ""
	if w := c.SendWindow; w != nil {
		windowFrom, windowTo, windowTZ = w.From, w.To, w.TimeZone
	}
	st := campaignState{status: c.Status, planned: c.Planned}
	return s.write(ctx, "create campaign", func(tx *txn) error {
		if err := s.admit(ctx, tx, c.CompanyID, st.reserved(), c.Planned, maxPending); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO campaigns (id, company_id, name, description, channel, mode, status, hidden, "+
			"template_id, template_name, message_type, config, sms_sender_id, chat_service_id, fallback_sender_id, planned, "+
			"failure_reason, created_at, updated_at, started_at, completed_at, valid_for, window_from, window_to, window_tz) "+
			"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			s.id(c.ID), s.id(c.CompanyID), c.Name, c.Description, string(c.Channel), string(c.Mode), string(c.Status), c.Hidden,
			s.nullID(c.TemplateID), c.TemplateName, int(c.MessageType), cfg, c.SMSSenderID, c.ChatServiceID, c.FallbackSender,
			c.Planned, c.FailureReason, s.ts(c.CreatedAt), s.ts(c.UpdatedAt), s.tsPtr(c.StartedAt), s.tsPtr(c.CompletedAt),
			int64(c.ValidFor/time.Second), windowFrom, windowTo, windowTZ)
		if err != nil {
			return duplicate(err, "campaign "+c.ID.String())
		}
		return nil
	})
}

// GetCampaign implements campaign.CampaignStore and survey.Store.
func (s *Store) GetCampaign(ctx context.Context, companyID, id messaging.ID) (_ messaging.Campaign, err error) {
	defer keepUnavailable(&err)
	c, err := scanCampaign(s.readRow(ctx, "SELECT "+campaignColumns+" FROM campaigns WHERE id = ? AND company_id = ?",
		s.id(id), s.id(companyID)))
	if errors.Is(err, sql.ErrNoRows) {
		return messaging.Campaign{}, messaging.CampaignNotFound(id)
	}
	if err != nil {
		return messaging.Campaign{}, fmt.Errorf("get campaign: %w", err)
	}
	return c, nil
}

// ListCampaigns implements campaign.CampaignStore: visible campaigns,
// newest first, ties by id, newest id first.
func (s *Store) ListCampaigns(ctx context.Context, companyID messaging.ID, f messaging.CampaignFilter) (_ []messaging.Campaign, _ int, err error) {
	defer keepUnavailable(&err)
	l := listing{what: "campaigns", columns: campaignColumns, from: " FROM campaigns WHERE company_id = ? AND NOT hidden",
		args: []any{s.id(companyID)}, order: "created_at DESC, id DESC"}
	if f.Mode != "" {
		l.and("mode = ?", string(f.Mode))
	}
	if f.Status != "" {
		l.and("status = ?", string(f.Status))
	}
	return list(ctx, s, l, f.PageRequest, scanCampaign)
}

// QueuingCampaigns implements campaign.CampaignStore.
func (s *Store) QueuingCampaigns(ctx context.Context, createdBefore time.Time, limit int) (_ []messaging.Campaign, err error) {
	defer keepUnavailable(&err)
	rows, err := s.read.QueryContext(ctx, "SELECT "+campaignColumns+" FROM campaigns WHERE status = ? AND created_at < ? ORDER BY created_at, id LIMIT ?",
		string(messaging.CampaignQueuing), s.ts(createdBefore), limit)
	if err != nil {
		return nil, fmt.Errorf("list queuing campaigns: %w", err)
	}
	out, err := collect(rows, scanCampaign)
	if err != nil {
		return nil, fmt.Errorf("list queuing campaigns: %w", err)
	}
	return out, nil
}

// TransitionCampaign implements campaign.CampaignStore.
func (s *Store) TransitionCampaign(ctx context.Context, t messaging.CampaignTransition) (err error) {
	defer keepUnavailable(&err)
	companyID, id, from, to, at, reason := t.CompanyID, t.CampaignID, t.From, t.To, t.At, t.Reason
	return s.write(ctx, "transition campaign", func(tx *txn) error {
		states, err := s.lockCampaigns(ctx, tx, []messaging.ID{id})
		if err != nil {
			return err
		}
		c := states[id]
		if c == nil || c.companyID != companyID {
			return messaging.CampaignNotFound(id)
		}
		if !slices.Contains(from, c.status) {
			return conflictf("Campaign %s is %s, not %s", id, c.status, joinStatuses(from))
		}
		before := c.pending()
		set := "status = ?, updated_at = ?"
		args := []any{string(to), s.ts(at)}
		where := "id = ?"
		switch to {
		case messaging.CampaignInProgress: // a resumed campaign keeps its start
			set += ", started_at = COALESCE(started_at, ?)"
			args = append(args, s.ts(at))
			switch {
			case t.Scheduled:
				where += " AND scheduled_at IS NOT NULL AND scheduled_at <= ?"
			case c.status == messaging.CampaignReady: // started by hand
				set += ", scheduled_at = NULL"
			}
		case messaging.CampaignCompleted:
			set += ", completed_at = ?"
			args = append(args, s.ts(at))
		case messaging.CampaignFailed:
			set += ", failure_reason = ?"
			args = append(args, reason)
		}
		if c.status == messaging.CampaignQueuing && to == messaging.CampaignFailed {
			// A failed preparation leaves no messages behind.
			if err := s.deleteCampaignMessages(ctx, tx, c); err != nil {
				return err
			}
			c.counts, c.fallback = messaging.StatusCounts{}, messaging.StatusCounts{}
			for _, col := range strings.Split(counterColumns, ", ") {
				set += ", " + col + " = 0"
			}
		}
		c.status = to
		args = append(args, s.id(id))
		if t.Scheduled {
			args = append(args, s.ts(at))
		}
		res, err := tx.ExecContext(ctx, "UPDATE campaigns SET "+set+" WHERE "+where, args...)
		if err != nil {
			return fmt.Errorf("update campaign: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("update campaign: %w", err)
		} else if n == 0 {
			return conflictf("Campaign %s is not scheduled at or before %s", id, at.Format(time.RFC3339))
		}
		if err := s.addPending(ctx, tx, map[messaging.ID]int{companyID: c.pending() - before}); err != nil {
			return err
		}
		return s.emitCampaignStatus(ctx, tx, []messaging.ID{id}, []messaging.ID{companyID}, at)
	})
}

// deleteCampaignMessages deletes every message of c. Its Pending ones are
// found through the claim indexes, channel by channel; others (which a
// campaign still Queuing has only if they were inserted so) through a
// scan.
func (s *Store) deleteCampaignMessages(ctx context.Context, tx *txn, c *campaignState) error {
	left := int64(c.counts.Total() + c.fallback.Total())
	for _, ch := range []messaging.Channel{messaging.ChannelSMS, messaging.ChannelChat} {
		res, err := tx.ExecContext(ctx, "DELETE FROM messages WHERE campaign_id = ? AND status = 'Pending' AND channel = ?", s.id(c.id), string(ch))
		if err != nil {
			return fmt.Errorf("delete messages: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("delete messages: %w", err)
		}
		left -= n
	}
	if left != 0 {
		if _, err := tx.ExecContext(ctx, "DELETE FROM messages WHERE campaign_id = ?", s.id(c.id)); err != nil {
			return fmt.Errorf("delete messages: %w", err)
		}
	}
	return nil
}

func joinStatuses(ss []messaging.CampaignStatus) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, " or ")
}

// PendingCount implements campaign.CampaignStore. An unknown company has
// nothing pending.
func (s *Store) PendingCount(ctx context.Context, companyID messaging.ID) (_ int, err error) {
	defer keepUnavailable(&err)
	var n int
	err = s.read.QueryRowContext(ctx, "SELECT pending_count FROM companies WHERE id = ?", s.id(companyID)).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pending count: %w", err)
	}
	return n, nil
}

// ReconcilePending implements campaign.CampaignStore. Every write that
// changes what a campaign adds to its company's pending count also updates
// the company's row, so locking every company first gives a consistent
// view of the campaigns.
func (s *Store) ReconcilePending(ctx context.Context) (_ int, err error) {
	defer keepUnavailable(&err)
	var fixed int
	err = s.write(ctx, "reconcile pending counts", func(tx *txn) error {
		fixed = 0
		if s.dialect == dialectPostgres {
			if _, err := tx.ExecContext(ctx, "SELECT id FROM companies ORDER BY id FOR UPDATE"); err != nil {
				return fmt.Errorf("lock companies: %w", err)
			}
		}
		greatest := "MAX"
		if s.dialect == dialectPostgres {
			greatest = "GREATEST"
		}
		rows, err := tx.QueryContext(ctx, "SELECT co.id, co.pending_count, COALESCE(SUM(c.pending + c.sending + c.fb_pending + c.fb_sending + "+
			"CASE WHEN c.status = 'Queuing' THEN "+greatest+"(0, c.planned - (c.pending + c.sending + c.sent + c.delivered + c.seen + c.failed)) ELSE 0 END), 0) "+
			"FROM companies co LEFT JOIN campaigns c ON c.company_id = co.id GROUP BY co.id, co.pending_count ORDER BY co.id")
		if err != nil {
			return fmt.Errorf("compute pending counts: %w", err)
		}
		want := map[messaging.ID]int{}
		for rows.Next() {
			var id messaging.ID
			var have, should int
			if err := rows.Scan(&id, &have, &should); err != nil {
				rows.Close()
				return fmt.Errorf("compute pending counts: %w", err)
			}
			if have != should {
				want[id] = should
			}
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("compute pending counts: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("compute pending counts: %w", err)
		}
		for id, n := range want {
			if _, err := tx.ExecContext(ctx, "UPDATE companies SET pending_count = ? WHERE id = ?", n, s.id(id)); err != nil {
				return fmt.Errorf("fix pending count: %w", err)
			}
		}
		fixed = len(want)
		return nil
	})
	return fixed, err
}

// CancelCampaign implements campaign.CampaignStore. On Postgres the
// campaign's row is locked first. Its Pending messages are then found
// through the claim index and locked (on Postgres skipping those a claim
// holds: they are being sent), so the cancel never waits for a message
// while it holds the campaign. They are written Failed as the
// dispatcher's updates are, then the campaign completes by
// compare-and-set.
func (s *Store) CancelCampaign(ctx context.Context, t messaging.CampaignTransition) (err error) {
	defer keepUnavailable(&err)
	return s.write(ctx, "cancel campaign", func(tx *txn) error {
		var status messaging.CampaignStatus
		q := "SELECT status FROM campaigns WHERE id = ? AND company_id = ?"
		if s.dialect == dialectPostgres {
			// Locked first: a result batch moving one of its messages back
			// to Pending (ApplyBatch's cancelRetries) either reads it
			// cancelled or commits before the Pending messages are read.
			q += " FOR UPDATE"
		}
		err := tx.QueryRowContext(ctx, q, s.id(t.CampaignID), s.id(t.CompanyID)).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return messaging.CampaignNotFound(t.CampaignID)
		}
		if err != nil {
			return fmt.Errorf("cancel campaign: %w", err)
		}
		if !slices.Contains(t.From, status) {
			return conflictf("Campaign %s is %s, not %s", t.CampaignID, status, joinStatuses(t.From))
		}
		q = "SELECT id FROM messages WHERE campaign_id = ? AND status = 'Pending'"
		if s.dialect == dialectPostgres {
			q += " FOR UPDATE SKIP LOCKED"
		}
		rows, err := tx.QueryContext(ctx, q, s.id(t.CampaignID))
		if err != nil {
			return fmt.Errorf("cancel campaign: %w", err)
		}
		var ids []messaging.ID
		for rows.Next() {
			var id messaging.ID
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("cancel campaign: %w", err)
			}
			ids = append(ids, id)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("cancel campaign: %w", err)
		}
		if len(ids) > 0 {
			slicesSortIDs(ids)
			states, err := s.lockMessages(ctx, tx, ids)
			if err != nil {
				return err
			}
			for _, id := range ids {
				if st := states[id]; st != nil {
					st.changed = st.apply(delivery.StatusUpdate{MessageID: id, Status: messaging.StatusFailed, At: t.At, Details: campaign.DetailsCancelled}, t.At)
				}
			}
			if err := s.writeStates(ctx, tx, states); err != nil {
				return err
			}
		}
		from := make([]string, len(t.From))
		args := []any{s.ts(t.At), s.ts(t.At), s.ts(t.At), s.id(t.CampaignID)}
		for i, st := range t.From {
			from[i] = "?"
			args = append(args, string(st))
		}
		res, err := tx.ExecContext(ctx, "UPDATE campaigns SET status = 'Completed', completed_at = ?, cancelled_at = ?, updated_at = ? "+
			"WHERE id = ? AND status IN ("+strings.Join(from, ", ")+")", args...)
		if err != nil {
			return fmt.Errorf("cancel campaign: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return conflictf("Campaign %s changed while being cancelled", t.CampaignID)
		}
		return s.emitCampaignStatus(ctx, tx, []messaging.ID{t.CampaignID}, []messaging.ID{t.CompanyID}, t.At)
	})
}

// ScheduleCampaign implements campaign.CampaignStore.
func (s *Store) ScheduleCampaign(ctx context.Context, companyID, id messaging.ID, at, now time.Time) (err error) {
	defer keepUnavailable(&err)
	return s.write(ctx, "schedule campaign", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "UPDATE campaigns SET scheduled_at = ?, updated_at = ? WHERE id = ? AND company_id = ? AND status = 'Ready'",
			s.ts(at), s.ts(now), s.id(id), s.id(companyID))
		if err != nil {
			return fmt.Errorf("schedule campaign: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("schedule campaign: %w", err)
		} else if n == 1 {
			return nil
		}
		var status string
		err = tx.QueryRowContext(ctx, "SELECT status FROM campaigns WHERE id = ? AND company_id = ?", s.id(id), s.id(companyID)).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return messaging.CampaignNotFound(id)
		}
		if err != nil {
			return fmt.Errorf("schedule campaign: %w", err)
		}
		return conflictf("Campaign %s is %s, not Ready", id, status)
	})
}

// DueCampaigns implements campaign.CampaignStore, through the partial
// index of scheduled Ready campaigns.
func (s *Store) DueCampaigns(ctx context.Context, now time.Time, limit int) (_ []messaging.Campaign, err error) {
	defer keepUnavailable(&err)
	rows, err := s.read.QueryContext(ctx, "SELECT "+campaignColumns+" FROM campaigns WHERE status = 'Ready' AND scheduled_at IS NOT NULL "+
		"AND scheduled_at <= ? ORDER BY scheduled_at, id LIMIT ?", s.ts(now), limit)
	if err != nil {
		return nil, fmt.Errorf("due campaigns: %w", err)
	}
	out, err := collect(rows, scanCampaign)
	if err != nil {
		return nil, fmt.Errorf("due campaigns: %w", err)
	}
	return out, nil
}

// secondsDst scans a whole number of seconds into a duration.
type secondsDst struct{ d *time.Duration }

// Scan implements sql.Scanner.
func (d secondsDst) Scan(v any) error {
	switch x := v.(type) {
	case int64:
		*d.d = time.Duration(x) * time.Second
	case nil:
		*d.d = 0
	default:
		return fmt.Errorf("seconds: unexpected %T", v)
	}
	return nil
}

// CountWaiting implements campaign.CampaignStore, through the claim index
// (Pending messages by campaign and due time).
func (s *Store) CountWaiting(ctx context.Context, campaignID messaging.ID, now time.Time) (_ int, err error) {
	defer keepUnavailable(&err)
	var n int
	err = s.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM messages WHERE campaign_id = ? AND status = 'Pending' AND due_at > ?",
		s.id(campaignID), s.ts(now)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count waiting messages: %w", err)
	}
	return n, nil
}
