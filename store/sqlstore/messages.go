package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

// messageColumnList names the columns of a message, in the order
// scanMessage reads them.
const messageColumnList = "id, company_id, campaign_id, channel, phone, external_user_id, content, config, " +
	"fallback_content, fallback_for, status, details, sms_error_code, provider_message_id, attempts, due_at, " +
	"lease_until, created_at, updated_at, sent_at, delivered_at, seen_at, expires_at, route"

// messageColumns returns messageColumnList, each column qualified by table
// when it is not empty.
func messageColumns(table string) string {
	if table == "" {
		return messageColumnList
	}
	return table + "." + strings.ReplaceAll(messageColumnList, ", ", ", "+table+".")
}

func scanMessage(row interface{ Scan(...any) error }) (messaging.Message, error) {
	var m messaging.Message
	err := row.Scan(&m.ID, &m.CompanyID, &m.CampaignID, &m.Channel, &m.Phone, &m.ExternalUserID, &m.Content,
		configDst{&m.Config}, &m.FallbackContent, &m.FallbackFor, &m.Status, &m.Details, &m.SMSErrorCode,
		textDst{&m.ProviderMessageID}, &m.Attempts, timeDst{&m.DueAt}, timeDst{&m.LeaseUntil}, timeDst{&m.CreatedAt},
		timeDst{&m.UpdatedAt}, timePtrDst{&m.SentAt}, timePtrDst{&m.DeliveredAt}, timePtrDst{&m.SeenAt},
		timePtrDst{&m.ExpiresAt}, textDst{&m.Route})
	return m, err
}

// InsertMessages implements campaign.CampaignStore: all or nothing,
// counted in the campaigns' counters. Within a campaign's reservation the
// pending count does not change; in general it changes by exactly what the
// messages add to their campaigns' share of it (see ReconcilePending).
func (s *Store) InsertMessages(ctx context.Context, msgs []*messaging.Message) (err error) {
	defer keepUnavailable(&err)
	if len(msgs) == 0 {
		return nil
	}
	b, err := newBatch(msgs)
	if err != nil {
		return fmt.Errorf("insert messages: %w", err)
	}
	s.prepareQueries(ctx)
	return s.write(ctx, "insert messages", func(tx *txn) error {
		s.nudgeAfter(tx, len(msgs))
		return s.insertMessages(ctx, tx, b, messaging.NilID, 0)
	})
}

// nudgeAfter asks, once tx is committed, for a look at the statistics of
// the partitions of messages when tx inserted many (AnalyzeGrownPartitions).
func (s *Store) nudgeAfter(tx *txn, inserted int) {
	if inserted >= nudgeRows && s.partitions != nil {
		tx.afterCommit(s.partitions.nudge)
	}
}

// AdmitMessages implements campaign.CampaignStore: the pending count
// grows by the messages within maxPending, or nothing is written.
func (s *Store) AdmitMessages(ctx context.Context, companyID messaging.ID, msgs []*messaging.Message, maxPending int) (err error) {
	defer keepUnavailable(&err)
	if len(msgs) == 0 {
		return nil
	}
	if companyID.IsZero() {
		return messaging.CompanyNotFound(companyID)
	}
	b, err := newBatch(msgs)
	if err != nil {
		return fmt.Errorf("admit messages: %w", err)
	}
	s.prepareQueries(ctx)
	return s.write(ctx, "admit messages", func(tx *txn) error {
		s.nudgeAfter(tx, len(msgs))
		return s.insertMessages(ctx, tx, b, companyID, maxPending)
	})
}

// insertMessages writes a batch and counts it. With a non-zero admitFor
// every message must belong to that company and the batch is admitted
// against maxPending.
func (s *Store) insertMessages(ctx context.Context, tx *txn, b *batch, admitFor messaging.ID, maxPending int) error {
	var campaignIDs []messaging.ID
	for i, m := range b.msgs {
		if i == 0 || m.CampaignID != b.msgs[i-1].CampaignID {
			campaignIDs = append(campaignIDs, m.CampaignID)
		}
	}
	states, err := s.lockCampaigns(ctx, tx, campaignIDs)
	if err != nil {
		return err
	}
	type delta struct{ counts, fallback messaging.StatusCounts }
	deltas := make(map[messaging.ID]*delta, len(states))
	for _, m := range b.msgs {
		c := states[m.CampaignID]
		if c == nil || c.companyID != m.CompanyID || (!admitFor.IsZero() && m.CompanyID != admitFor) {
			return messaging.CampaignNotFound(m.CampaignID)
		}
		if !admitFor.IsZero() && !m.IsFallback() && c.status != messaging.CampaignInProgress { // paused or cancelled meanwhile
			return messaging.Errorf(messaging.Invalid, messaging.NameCampaignNotActive, "Campaign %s is %s, not InProgress", m.CampaignID, c.status)
		}
		if m.IsFallback() && c.cancelled && m.Status.Unsent() {
			// A chat failure reported after the cancel: its fallback SMS
			// is recorded, and not sent.
			m.Status, m.Details = messaging.StatusFailed, campaign.DetailsCancelled
		}
		d := deltas[m.CampaignID]
		if d == nil {
			d = new(delta)
			deltas[m.CampaignID] = d
		}
		if m.IsFallback() {
			d.fallback.Add(m.Status, 1)
		} else {
			d.counts.Add(m.Status, 1)
		}
	}
	pending := map[messaging.ID]int{}
	for id, d := range deltas {
		c := states[id]
		before := c.pending()
		for _, st := range messaging.MessageStatuses() {
			c.counts.Add(st, d.counts.Of(st))
			c.fallback.Add(st, d.fallback.Of(st))
		}
		pending[c.companyID] += c.pending() - before
	}
	if !admitFor.IsZero() {
		if err := s.admit(ctx, tx, admitFor, pending[admitFor], len(b.msgs), maxPending); err != nil {
			return err
		}
		delete(pending, admitFor)
	}
	if err := s.insertRows(ctx, tx, b); err != nil {
		return err
	}
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
	return s.addPending(ctx, tx, pending)
}

// GetMessage implements campaign.CampaignStore.
func (s *Store) GetMessage(ctx context.Context, companyID, id messaging.ID) (_ messaging.Message, err error) {
	defer keepUnavailable(&err)
	m, err := scanMessage(s.read.QueryRowContext(ctx, "SELECT "+messageColumns("")+" FROM messages WHERE id = ? AND company_id = ?",
		s.id(id), s.id(companyID)))
	if errors.Is(err, sql.ErrNoRows) {
		return messaging.Message{}, messaging.MessageNotFound(id)
	}
	if err != nil {
		return messaging.Message{}, fmt.Errorf("get message: %w", err)
	}
	return m, nil
}

// MessageByID implements delivery.EventStore.
func (s *Store) MessageByID(ctx context.Context, id messaging.ID) (_ messaging.Message, err error) {
	defer keepUnavailable(&err)
	m, err := scanMessage(s.readRow(ctx, "SELECT "+messageColumns("")+" FROM messages WHERE id = ?", s.id(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return messaging.Message{}, messaging.MessageNotFound(id)
	}
	if err != nil {
		return messaging.Message{}, fmt.Errorf("message by id: %w", err)
	}
	return m, nil
}

// ListMessages implements campaign.CampaignStore: newest first, ties by
// id, newest id first.
func (s *Store) ListMessages(ctx context.Context, companyID messaging.ID, f messaging.MessageFilter) (_ []messaging.Message, _ int, err error) {
	defer keepUnavailable(&err)
	return list(ctx, s, s.messageListing(companyID, f), f.PageRequest, scanMessage)
}

// CampaignMessagesAfter implements campaign.CampaignStore, through the
// primary key from the campaign's id on (see ListMessages).
func (s *Store) CampaignMessagesAfter(ctx context.Context, companyID, campaignID, after messaging.ID, limit int) (_ []messaging.Message, err error) {
	defer keepUnavailable(&err)
	if from := campaignID.Time().Add(-purgeMargin); from.UnixMilli() > 0 {
		if low := idAt(from, 0); bytes.Compare(after[:], low[:]) < 0 {
			after = low
		}
	}
	company := "company_id"
	if s.dialect == dialectSQLite {
		company = "+company_id"
	}
	rows, err := s.read.QueryContext(ctx, "SELECT "+messageColumns("")+" FROM messages WHERE id > ? AND campaign_id = ? AND "+company+" = ? ORDER BY id LIMIT ?",
		s.id(after), s.id(campaignID), s.id(companyID), limit)
	if err != nil {
		return nil, fmt.Errorf("read campaign messages: %w", err)
	}
	out, err := collect(rows, scanMessage)
	if err != nil {
		return nil, fmt.Errorf("read campaign messages: %w", err)
	}
	return out, nil
}

// messageListing is the query of ListMessages.
func (s *Store) messageListing(companyID messaging.ID, f messaging.MessageFilter) listing {
	l := listing{what: "messages", columns: messageColumns(""), from: " FROM messages WHERE company_id = ?",
		args: []any{s.id(companyID)}, order: "created_at DESC, id DESC"}
	if f.Phone != "" {
		l.and("phone = ?", f.Phone)
	}
	if f.ExternalUserID != "" {
		// The second term lets the partial index serve the query.
		l.and("external_user_id = ? AND external_user_id <> ''", f.ExternalUserID)
	}
	// A read by phone number or external user id names no id, so it
	// probes every partition's hash index: planned on each call, its
	// planning grew with the partitions and cost ten times its run.
	// Planned once per connection, it costs one probe a partition.
	l.generic = f.Phone != "" || f.ExternalUserID != ""
	if !f.CampaignID.IsZero() && f.Phone == "" && f.ExternalUserID == "" {
		// No index of messages by campaign is kept: the campaign's
		// messages were made after it, so their ids (UUIDv7) are bounded
		// below by its own, less a margin for clocks of other processes,
		// and the primary key skips everything older, read backwards for
		// the newest first. SQLite is kept off the company's index (which
		// would read every message of the company and sort them).
		if s.dialect == dialectSQLite {
			l.from = " FROM messages WHERE +company_id = ?"
		}
		l.order = "id DESC"
	}
	if !f.CampaignID.IsZero() {
		if from := f.CampaignID.Time().Add(-purgeMargin); from.UnixMilli() > 0 {
			l.and("id >= ?", s.id(idAt(from, 0)))
		}
		l.and("campaign_id = ?", s.id(f.CampaignID))
	}
	if f.Status != "" {
		l.and("status = ?", string(f.Status))
	}
	if !f.From.IsZero() {
		l.and("created_at >= ?", s.ts(f.From))
	}
	if !f.To.IsZero() {
		l.and("created_at <= ?", s.ts(f.To))
	}
	return l
}

// summaryQuery is the query of SummarizeMessages, for one company when
// company is set. No index of messages by company or creation time is
// kept: the messages created since a time have ids (UUIDv7) from that
// time on, less a margin for clocks of other processes, so the primary
// key skips everything older, and on Postgres the older partitions are
// not read at all. SQLite is kept off the company's index, which would
// read every message the company ever had.
func (s *Store) summaryQuery(company bool) string {
	q := "SELECT company_id, channel, status, CASE WHEN status = 'Failed' THEN details ELSE '' END, COUNT(*) " +
		"FROM messages WHERE id >= ? AND created_at >= ?"
	if company {
		if s.dialect == dialectSQLite {
			q += " AND +company_id = ?"
		} else {
			q += " AND company_id = ?"
		}
	}
	return q + " GROUP BY 1, 2, 3, 4"
}

// SummarizeMessages implements campaign.CampaignStore, through the
// primary key from since on (see summaryQuery).
func (s *Store) SummarizeMessages(ctx context.Context, companyID messaging.ID, since time.Time) (_ []messaging.MessageTally, err error) {
	defer keepUnavailable(&err)
	var low messaging.ID
	if from := since.Add(-purgeMargin); from.UnixMilli() > 0 {
		low = idAt(from, 0)
	}
	args := []any{s.id(low), s.ts(since)}
	if !companyID.IsZero() {
		args = append(args, s.id(companyID))
	}
	rows, err := s.read.QueryContext(ctx, s.summaryQuery(!companyID.IsZero()), args...)
	if err != nil {
		return nil, fmt.Errorf("summarize messages: %w", err)
	}
	out, err := collect(rows, func(row interface{ Scan(...any) error }) (messaging.MessageTally, error) {
		var t messaging.MessageTally
		err := row.Scan(&t.CompanyID, &t.Channel, &t.Status, &t.Reason, &t.Count)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("summarize messages: %w", err)
	}
	slices.SortFunc(out, messaging.CompareTallies)
	return out, nil
}
