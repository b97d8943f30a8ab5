package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/webhook"
)

// subscribers returns, for those of the companies that have any, the
// enabled endpoints subscribed to event type t. It reads in the writing
// transaction: an endpoint registered before the transaction gets its
// events.
func (s *Store) subscribers(ctx context.Context, tx *txn, companies []messaging.ID, t webhook.EventType) (map[messaging.ID][]messaging.ID, error) {
	if len(companies) == 0 {
		return nil, nil
	}
	rows, err := s.rawQuery(ctx, tx, s.queries().subscribers, s.jsonIDs(companies))
	if err != nil {
		return nil, fmt.Errorf("read webhook endpoints: %w", err)
	}
	defer rows.Close()
	var out map[messaging.ID][]messaging.ID
	for rows.Next() {
		var id, company messaging.ID
		var events string
		if err := rows.Scan(&id, &company, &events); err != nil {
			return nil, fmt.Errorf("read webhook endpoints: %w", err)
		}
		if !slices.Contains(strings.Split(events, ","), string(t)) {
			continue
		}
		if out == nil {
			out = map[messaging.ID][]messaging.ID{}
		}
		out[company] = append(out[company], id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read webhook endpoints: %w", err)
	}
	for _, ids := range out {
		slicesSortIDs(ids)
	}
	return out, nil
}

// emitMessageStatus writes the message.status events of the messages in
// moved (their trails, Sending left out) whose company has an endpoint
// subscribed, with a delivery for each such endpoint. An event is written
// with its status only (webhook.MessageStatusRef): the message is
// described when the event is read to be sent, outside the writer.
func (s *Store) emitMessageStatus(ctx context.Context, tx *txn, states map[messaging.ID]*messageState, moved []messaging.ID) error {
	var companies []messaging.ID
	for _, id := range moved {
		if c := states[id].CompanyID; !slices.Contains(companies, c) {
			companies = append(companies, c)
		}
	}
	subs, err := s.subscribers(ctx, tx, companies, webhook.MessageStatus)
	if err != nil || len(subs) == 0 {
		return err
	}
	var events []webhook.Event
	for _, id := range moved {
		st := states[id]
		if subs[st.CompanyID] == nil {
			continue
		}
		for _, mv := range st.trail {
			if mv.status != messaging.StatusSending {
				events = append(events, webhook.MessageStatusRef(s.idGen.New(), st.CompanyID, id, mv.status, mv.at))
			}
		}
	}
	return s.writeEvents(ctx, tx, events, subs)
}

// writeEvents inserts events and, for each, a delivery to every endpoint
// of subs[its company], due at once.
func (s *Store) writeEvents(ctx context.Context, tx *txn, events []webhook.Event, subs map[messaging.ID][]messaging.ID) error {
	for chunk := range slices.Chunk(events, 500) {
		ev := s.newJSONRows(len(chunk))
		dl := s.newJSONRows(len(chunk))
		for _, e := range chunk {
			render := int64(0)
			if e.Type == webhook.MessageStatus { // written by MessageStatusRef
				render = 1
			}
			ev.row().id(e.ID).id(e.CompanyID).text(string(e.Type)).id(e.Subject).ts(e.CreatedAt).text(string(e.Data)).int(render)
			for _, ep := range subs[e.CompanyID] {
				dl.row().id(s.idGen.New()).id(ep).id(e.ID).id(e.Subject).ts(e.CreatedAt)
			}
		}
		if _, err := s.rawExec(ctx, tx, "INSERT INTO webhook_events (id, company_id, type, subject_id, created_at, data, render) "+
			s.jsonSelect([]string{"id", "company_id", "type", "subject_id", "created_at", "data", "render"},
				[]int{jsonID, jsonID, jsonText, jsonID, jsonTime, jsonText, jsonBool}), ev.String()); err != nil {
			return fmt.Errorf("write webhook events: %w", err)
		}
		if dl.rows == 0 {
			continue
		}
		if _, err := s.rawExec(ctx, tx, "INSERT INTO webhook_deliveries (id, endpoint_id, event_id, subject_id, next_at) "+
			s.jsonSelect([]string{"id", "endpoint_id", "event_id", "subject_id", "next_at"},
				[]int{jsonID, jsonID, jsonID, jsonID, jsonTime}), dl.String()); err != nil {
			return fmt.Errorf("write webhook deliveries: %w", err)
		}
	}
	return nil
}

const deliveryColumns = "d.id, d.endpoint_id, d.state, d.attempts, d.next_at, d.last_at, d.last_status, d.last_error, d.last_latency_us, " +
	"e.id, e.company_id, e.type, e.subject_id, e.created_at, e.data, e.render"

// deliveryRow is a delivery as read, and whether its event's message is
// still to be described.
type deliveryRow struct {
	webhook.Delivery
	render bool
}

func scanDelivery(row interface{ Scan(...any) error }) (deliveryRow, error) {
	var d deliveryRow
	var latency int64
	var data string
	err := row.Scan(&d.ID, &d.EndpointID, &d.State, &d.Attempts, timeDst{&d.NextAt}, timePtrDst{&d.LastAt}, &d.LastStatus,
		&d.LastError, &latency, &d.Event.ID, &d.Event.CompanyID, &d.Event.Type, &d.Event.Subject, timeDst{&d.Event.CreatedAt}, &data, &d.render)
	d.LastLatency = time.Duration(latency) * time.Microsecond
	d.Event.Data = []byte(data)
	return d, err
}

// describe returns the deliveries with the events written with their
// status only described from their messages' rows, read in one go.
func (s *Store) describe(ctx context.Context, rows []deliveryRow) ([]webhook.Delivery, error) {
	var ids []messaging.ID
	for _, d := range rows {
		if d.render && !slices.Contains(ids, d.Event.Subject) {
			ids = append(ids, d.Event.Subject)
		}
	}
	msgs := make(map[messaging.ID]*messaging.Message, len(ids))
	for chunk := range slices.Chunk(ids, 1000) {
		r, err := s.read.QueryContext(ctx, "SELECT "+messageColumnList+" FROM messages WHERE "+s.jsonIDsIn("id"), s.jsonIDs(chunk))
		if err != nil {
			return nil, fmt.Errorf("read the messages of events: %w", err)
		}
		got, err := collect(r, scanMessage)
		if err != nil {
			return nil, fmt.Errorf("read the messages of events: %w", err)
		}
		for i := range got {
			msgs[got[i].ID] = &got[i]
		}
	}
	out := make([]webhook.Delivery, len(rows))
	for i, d := range rows {
		out[i] = d.Delivery
		if d.render {
			out[i].Event = webhook.Describe(d.Event, msgs[d.Event.Subject])
		}
	}
	return out, nil
}

// WaitingDeliveries implements webhook.Outbox.
func (s *Store) WaitingDeliveries(ctx context.Context, endpointID messaging.ID, limit int) (_ []webhook.Delivery, err error) {
	defer keepUnavailable(&err)
	rows, err := s.read.QueryContext(ctx, "SELECT "+deliveryColumns+" FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id "+
		"WHERE d.endpoint_id = ? AND d.state = 0 ORDER BY d.id LIMIT ?", s.id(endpointID), limit)
	if err != nil {
		return nil, fmt.Errorf("read waiting deliveries: %w", err)
	}
	got, err := collect(rows, scanDelivery)
	if err != nil {
		return nil, fmt.Errorf("read waiting deliveries: %w", err)
	}
	return s.describe(ctx, got)
}

// LeaseWebhooks implements webhook.Outbox.
func (s *Store) LeaseWebhooks(ctx context.Context, owner string, now, until time.Time) (_ []webhook.Endpoint, err error) {
	defer keepUnavailable(&err)
	var out []webhook.Endpoint
	err = s.write(ctx, "lease webhooks", func(tx *txn) error {
		rows, err := tx.QueryContext(ctx, "UPDATE webhook_endpoints SET lease_owner = ?, lease_until = ? "+
			"WHERE disabled_at IS NULL AND (lease_owner IS NULL OR lease_owner = ? OR lease_until < ?) RETURNING "+webhookColumns,
			owner, s.ts(until), owner, s.ts(now))
		if err != nil {
			return fmt.Errorf("lease webhooks: %w", err)
		}
		out, err = collect(rows, s.scanWebhook)
		if err != nil {
			return fmt.Errorf("lease webhooks: %w", err)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b webhook.Endpoint) int { return compareIDs(a.ID, b.ID) })
	return out, err
}

// RecordAttempts implements webhook.Outbox. The attempts of one batch
// request share their outcome: a run of at least minSharedOutcome
// attempts alike is marked in one statement, the ids its only rows; the
// others in statements of their rows, up to 1000 a statement.
func (s *Store) RecordAttempts(ctx context.Context, attempts []webhook.Attempt) (err error) {
	defer keepUnavailable(&err)
	if len(attempts) == 0 {
		return nil
	}
	var single []webhook.Attempt
	var shared [][]webhook.Attempt
	for i := 0; i < len(attempts); {
		j := i + 1
		for j < len(attempts) && sameOutcome(attempts[i], attempts[j]) {
			j++
		}
		if j-i >= minSharedOutcome {
			shared = append(shared, attempts[i:j])
		} else {
			single = append(single, attempts[i:j]...)
		}
		i = j
	}
	return s.write(ctx, "record webhook attempts", func(tx *txn) error {
		for _, run := range shared {
			for chunk := range slices.Chunk(run, 1000) {
				ids := make([]messaging.ID, len(chunk))
				for i, a := range chunk {
					ids[i] = a.DeliveryID
				}
				a := chunk[0]
				if _, err := s.rawExec(ctx, tx, "UPDATE webhook_deliveries SET state = ?, next_at = ?, last_at = ?, last_status = ?, "+
					"last_error = ?, last_latency_us = ?, attempts = attempts + 1 WHERE "+s.jsonIDsIn("id"),
					int64(a.State), s.ts(a.NextAt), s.ts(a.At), int64(a.Status), a.Error, a.Latency.Microseconds(), s.jsonIDs(ids)); err != nil {
					return fmt.Errorf("record webhook attempts: %w", err)
				}
			}
		}
		for chunk := range slices.Chunk(single, 1000) {
			rows := s.newJSONRows(len(chunk))
			for _, a := range chunk {
				rows.row().id(a.DeliveryID).int(int64(a.State)).ts(a.NextAt).ts(a.At).int(int64(a.Status)).text(a.Error).
					int(a.Latency.Microseconds())
			}
			_, err := s.rawExec(ctx, tx, "WITH v AS ("+s.jsonSelect(
				[]string{"id", "state", "next_at", "last_at", "last_status", "last_error", "last_latency_us"},
				[]int{jsonID, jsonInt, jsonTime, jsonTime, jsonInt, jsonText, jsonInt})+
				") UPDATE webhook_deliveries SET state = v.state, next_at = v.next_at, last_at = v.last_at, last_status = v.last_status, "+
				"last_error = v.last_error, last_latency_us = v.last_latency_us, attempts = webhook_deliveries.attempts + 1 "+
				"FROM v WHERE webhook_deliveries.id = v.id"+s.pgAlsoIn("webhook_deliveries.id", "SELECT id FROM v"), rows.String())
			if err != nil {
				return fmt.Errorf("record webhook attempts: %w", err)
			}
		}
		return nil
	})
}

// minSharedOutcome is the shortest run of attempts alike that
// RecordAttempts marks by their ids alone.
const minSharedOutcome = 8

// sameOutcome reports whether a and b differ in their delivery only.
func sameOutcome(a, b webhook.Attempt) bool {
	return a.State == b.State && a.Status == b.Status && a.Error == b.Error && a.Latency == b.Latency &&
		a.At.Equal(b.At) && a.NextAt.Equal(b.NextAt)
}

// DisableWebhook implements webhook.Outbox.
func (s *Store) DisableWebhook(ctx context.Context, id messaging.ID, at time.Time, reason string) (err error) {
	defer keepUnavailable(&err)
	res, err := s.db.ExecContext(ctx, "UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ?, lease_owner = NULL, lease_until = NULL WHERE id = ?",
		s.ts(at), reason, s.id(id))
	return updatedOne(res, err, "disable webhook", func() error { return webhook.NotFound(id) })
}

// PurgeEvents implements webhook.Purger. Event and delivery ids are
// UUIDv7s, made when they were written, so the events written before a
// time are those whose id is below the first id of that millisecond, read
// through the primary key; their deliveries, written in the same
// transaction, are found the same way (those of one transaction may be
// left for the next purge when the cut falls inside it).
func (s *Store) PurgeEvents(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer keepUnavailable(&err)
	cut := s.id(idAt(before, 0))
	var n int
	err = s.write(ctx, "purge webhook events", func(tx *txn) error {
		var last messaging.ID // the zero id when there is none
		err := tx.QueryRowContext(ctx, "SELECT COUNT(*) OVER (), id FROM (SELECT id FROM webhook_events WHERE id < ? ORDER BY id LIMIT ?) e "+
			"ORDER BY id DESC LIMIT 1", cut, limit).Scan(&n, &last)
		if errors.Is(err, sql.ErrNoRows) {
			n = 0
			return nil
		}
		if err != nil {
			return fmt.Errorf("purge webhook events: %w", err)
		}
		if n == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries "+
			"WHERE id < ? AND event_id <= ? ORDER BY id LIMIT ?)", cut, s.id(last), limit*webhook.MaxEndpoints); err != nil {
			return fmt.Errorf("purge webhook deliveries: %w", err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM webhook_events WHERE id <= ?", s.id(last)); err != nil {
			return fmt.Errorf("purge webhook events: %w", err)
		}
		return nil
	})
	return n, err
}

// ListDeliveries implements webhook.Store, through the deliveries' index
// by endpoint and event.
func (s *Store) ListDeliveries(ctx context.Context, companyID, endpointID messaging.ID, page messaging.PageRequest) (_ []webhook.Delivery, _ int, err error) {
	defer keepUnavailable(&err)
	var n int
	err = s.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM webhook_endpoints WHERE id = ? AND company_id = ?", s.id(endpointID), s.id(companyID)).Scan(&n)
	if err != nil {
		return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
	}
	if n == 0 {
		return nil, 0, webhook.NotFound(endpointID)
	}
	var total int
	if err := s.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ?", s.id(endpointID)).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
	}
	rows, err := s.read.QueryContext(ctx, "SELECT "+deliveryColumns+" FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id "+
		"WHERE d.endpoint_id = ? ORDER BY d.event_id DESC LIMIT ? OFFSET ?", s.id(endpointID), page.PageSize, page.Offset())
	if err != nil {
		return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
	}
	got, err := collect(rows, scanDelivery)
	if err != nil {
		return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
	}
	out, err := s.describe(ctx, got)
	return out, total, err
}

// Redeliver implements webhook.Store.
func (s *Store) Redeliver(ctx context.Context, companyID, endpointID, eventID messaging.ID, now time.Time) (err error) {
	defer keepUnavailable(&err)
	res, err := s.db.ExecContext(ctx, "UPDATE webhook_deliveries SET state = 0, next_at = ? WHERE endpoint_id = ? AND event_id = ? "+
		"AND endpoint_id IN (SELECT id FROM webhook_endpoints WHERE company_id = ?)", s.ts(now), s.id(endpointID), s.id(eventID), s.id(companyID))
	return updatedOne(res, err, "redeliver", func() error { return messaging.NotFoundf("no delivery of event %s", eventID) })
}

// emitCampaignStatus writes the campaign.status events of the campaigns
// ids (of companies), which moved to their status at at, for the
// companies that subscribe to them; the campaigns are read as written.
func (s *Store) emitCampaignStatus(ctx context.Context, tx *txn, ids, companies []messaging.ID, at time.Time) error {
	subs, err := s.subscribers(ctx, tx, companies, webhook.CampaignStatus)
	if err != nil || len(subs) == 0 {
		return err
	}
	rows, err := s.rawQuery(ctx, tx, "SELECT "+campaignColumns+" FROM campaigns WHERE "+s.jsonIDsIn("id")+" ORDER BY id", s.jsonIDs(ids))
	if err != nil {
		return fmt.Errorf("read campaigns for their events: %w", err)
	}
	cs, err := collect(rows, scanCampaign)
	if err != nil {
		return fmt.Errorf("read campaigns for their events: %w", err)
	}
	var events []webhook.Event
	for i := range cs {
		if subs[cs[i].CompanyID] != nil {
			events = append(events, webhook.CampaignStatusEvent(s.idGen.New(), &cs[i], at))
		}
	}
	return s.writeEvents(ctx, tx, events, subs)
}

// emitSurveyAnswered writes the survey.answered events of the results
// stored, for the companies that subscribe to them, at the time of the
// write.
func (s *Store) emitSurveyAnswered(ctx context.Context, tx *txn, rs []*messaging.SurveyResult, stored []bool) error {
	var companies []messaging.ID
	for i, r := range rs {
		if stored[i] && !slices.Contains(companies, r.CompanyID) {
			companies = append(companies, r.CompanyID)
		}
	}
	subs, err := s.subscribers(ctx, tx, companies, webhook.SurveyAnswered)
	if err != nil || len(subs) == 0 {
		return err
	}
	now := time.Now()
	var events []webhook.Event
	for i, r := range rs {
		if stored[i] && subs[r.CompanyID] != nil {
			events = append(events, webhook.SurveyAnsweredEvent(s.idGen.New(), r, now))
		}
	}
	return s.writeEvents(ctx, tx, events, subs)
}
