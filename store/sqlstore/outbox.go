package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/webhook"
)

// subscriber is an endpoint subscribed to an event type: its id, and
// its batch size (0 when it takes one event a request).
type subscriber struct {
	id    messaging.ID
	batch int
}

// subscriberMap holds, by company, the endpoints subscribed to an event
// type, in the order of their ids.
type subscriberMap map[messaging.ID][]subscriber

// subscribers returns, for those of the companies that have any, the
// enabled endpoints subscribed to event type t. It reads in the writing
// transaction: an endpoint registered before the transaction gets its
// events.
func (s *Store) subscribers(ctx context.Context, tx *txn, companies []messaging.ID, t webhook.EventType) (subscriberMap, error) {
	if len(companies) == 0 {
		return nil, nil
	}
	rows, err := s.rawQuery(ctx, tx, s.queries().subscribers, s.jsonIDs(companies))
	if err != nil {
		return nil, fmt.Errorf("read webhook endpoints: %w", err)
	}
	defer rows.Close()
	var out subscriberMap
	for rows.Next() {
		var sub subscriber
		var company messaging.ID
		var events string
		if err := rows.Scan(&sub.id, &company, &events, &sub.batch); err != nil {
			return nil, fmt.Errorf("read webhook endpoints: %w", err)
		}
		if !slices.Contains(strings.Split(events, ","), string(t)) {
			continue
		}
		if out == nil {
			out = subscriberMap{}
		}
		out[company] = append(out[company], sub)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read webhook endpoints: %w", err)
	}
	for _, subs := range out {
		slices.SortFunc(subs, func(a, b subscriber) int { return compareIDs(a.id, b.id) })
	}
	return out, nil
}

// emitMessageStatus writes the message.status events of the messages in
// moved (their trails, Sending left out) whose company has an endpoint
// subscribed, with a delivery for each such endpoint. An event is written
// with its data (webhook.MessageStatusEvent) when lockMessages read what
// it needs, so that the sender reads nothing else; otherwise with its
// status only (webhook.MessageStatusRef), the message described when the
// event is read to be sent. The locks read it once a write found an
// endpoint, until a lease of the endpoints finds none (LeaseWebhooks).
func (s *Store) emitMessageStatus(ctx context.Context, tx *txn, states map[messaging.ID]*messageState, moved []messaging.ID) error {
	var companies []messaging.ID
	for _, id := range moved {
		if c := states[id].CompanyID; !slices.Contains(companies, c) {
			companies = append(companies, c)
		}
	}
	subs, err := s.subscribers(ctx, tx, companies, webhook.MessageStatus)
	if err != nil {
		return err
	}
	if len(subs) == 0 {
		return nil
	}
	if !s.describeEvents.Load() {
		s.describeEvents.Store(true)
	}
	var events []webhook.Event
	for _, id := range moved {
		st := states[id]
		if subs[st.CompanyID] == nil {
			continue
		}
		for _, mv := range st.trail {
			switch {
			case mv.status == messaging.StatusSending:
			case st.desc != nil:
				m := st.message(id, mv.status)
				events = append(events, webhook.MessageStatusEvent(s.idGen.New(), &m, mv.at))
			default:
				events = append(events, webhook.MessageStatusRef(s.idGen.New(), st.CompanyID, id, mv.status, mv.at))
			}
		}
	}
	return s.writeEvents(ctx, tx, events, subs)
}

// writeEvents inserts events and the deliveries of every endpoint of
// subs[their company], due at once. An endpoint taking one event a
// request gets a delivery an event. An endpoint taking batches gets one
// delivery for its company's events of the write, up to its batch size
// each: a row that the sender reads, sends and records as one. When every
// endpoint of a company takes batches, its events of the write are packed
// too, a row for the events of each such delivery (packEvents), so the
// sender reads a delivery's events with it, in one row.
func (s *Store) writeEvents(ctx context.Context, tx *txn, events []webhook.Event, subs subscriberMap) error {
	for chunk := range slices.Chunk(events, 500) {
		ev := s.newJSONRows(len(chunk))
		dl := s.newJSONRows(len(chunk))
		var grouped map[messaging.ID][]webhook.Event // by company, for endpoints taking batches
		var companies []messaging.ID                 // of grouped, in the order of their first event
		for _, e := range chunk {
			batched, packed := false, true
			for _, ep := range subs[e.CompanyID] {
				if ep.batch > 0 {
					batched = true
				} else {
					packed = false
				}
			}
			if batched {
				if grouped == nil {
					grouped = map[messaging.ID][]webhook.Event{}
				}
				if grouped[e.CompanyID] == nil {
					companies = append(companies, e.CompanyID)
				}
				grouped[e.CompanyID] = append(grouped[e.CompanyID], e)
			}
			if !batched || !packed {
				ev.row().id(e.ID).id(e.CompanyID).text(string(e.Type)).id(e.Subject).ts(e.CreatedAt).text(string(e.Data)).int(render(e))
			}
			for _, ep := range subs[e.CompanyID] {
				if ep.batch == 0 {
					dl.row().id(s.idGen.New()).id(ep.id).id(e.ID).id(e.Subject).ts(e.CreatedAt).text("").int(1)
				}
			}
		}
		for _, company := range companies {
			es := grouped[company]
			pack := len(es) // events a pack, when every endpoint takes batches
			for _, ep := range subs[company] {
				pack = min(pack, ep.batch)
			}
			if pack > 0 {
				for g := range slices.Chunk(es, pack) {
					if len(g) == 1 {
						e := g[0]
						ev.row().id(e.ID).id(e.CompanyID).text(string(e.Type)).id(e.Subject).ts(e.CreatedAt).text(string(e.Data)).int(render(e))
					} else if err := s.packEvents(ctx, tx, g); err != nil {
						return err
					}
					for _, ep := range subs[company] {
						s.batchDelivery(dl, ep.id, g)
					}
				}
				continue
			}
			for _, ep := range subs[company] {
				if ep.batch == 0 {
					continue
				}
				for g := range slices.Chunk(es, ep.batch) {
					s.batchDelivery(dl, ep.id, g)
				}
			}
		}
		if ev.rows > 0 {
			if _, err := s.rawExec(ctx, tx, "INSERT INTO webhook_events (id, company_id, type, subject_id, created_at, data, render) "+
				s.jsonSelect([]string{"id", "company_id", "type", "subject_id", "created_at", "data", "render"},
					[]int{jsonID, jsonID, jsonText, jsonID, jsonTime, jsonText, jsonBool}), ev.String()); err != nil {
				return fmt.Errorf("write webhook events: %w", err)
			}
		}
		if dl.rows == 0 {
			continue
		}
		if _, err := s.rawExec(ctx, tx, "INSERT INTO webhook_deliveries (id, endpoint_id, event_id, subject_id, next_at, event_ids, events) "+
			s.jsonSelect([]string{"id", "endpoint_id", "event_id", "subject_id", "next_at", "event_ids", "events"},
				[]int{jsonID, jsonID, jsonID, jsonID, jsonTime, jsonText, jsonInt}), dl.String()); err != nil {
			return fmt.Errorf("write webhook deliveries: %w", err)
		}
	}
	return nil
}

// render is the render column of e: 1 for an event written with its
// status only (webhook.MessageStatusRef), described when read.
func render(e webhook.Event) int64 {
	if e.Type == webhook.MessageStatus && isStatusRef(e.Data) {
		return 1
	}
	return 0
}

// batchDelivery adds to dl the delivery of events g, in order, to the
// endpoint taking batches: it lists their ids, and is due at the oldest.
// Its event_id is the first event's, the id of their pack when they are
// packed.
func (s *Store) batchDelivery(dl *jsonRows, endpoint messaging.ID, g []webhook.Event) {
	ids := make([]byte, 0, 32*len(g))
	due := g[0].CreatedAt
	for _, e := range g {
		ids = hex.AppendEncode(ids, e.ID[:])
		if e.CreatedAt.Before(due) {
			due = e.CreatedAt
		}
	}
	dl.row().id(s.idGen.New()).id(endpoint).id(g[0].ID).id(g[0].Subject).ts(due).text(string(ids)).int(int64(len(g)))
}

// packEvents inserts events g, of one company, as one row: the first
// event's id, type, subject and time, the pack of them all as its data
// (appendPacked) and their count. Its data goes to the database as it is,
// bound as an argument.
func (s *Store) packEvents(ctx context.Context, tx *txn, g []webhook.Event) error {
	n := 0
	for _, e := range g {
		n += 100 + len(e.Type) + len(e.Data)
	}
	pack := make([]byte, 0, n)
	for _, e := range g {
		pack = appendPacked(pack, e, render(e) == 1)
	}
	e := g[0]
	if _, err := s.rawExec(ctx, tx, "INSERT INTO webhook_events (id, company_id, type, subject_id, created_at, data, events) "+
		"VALUES (?, ?, ?, ?, ?, ?, ?)", s.id(e.ID), s.id(e.CompanyID), string(e.Type), s.id(e.Subject), s.ts(e.CreatedAt),
		string(pack), len(g)); err != nil {
		return fmt.Errorf("write webhook events: %w", err)
	}
	return nil
}

// isStatusRef reports whether data is that of an event written by
// webhook.MessageStatusRef: its status only, described when read.
func isStatusRef(data []byte) bool {
	return bytes.HasPrefix(data, []byte(`{"status":`))
}

// eventIDs returns the ids of a delivery's event_ids, 32 hex digits each.
func eventIDs(list string) ([]messaging.ID, error) {
	if len(list)%32 != 0 {
		return nil, fmt.Errorf("webhook delivery event list of %d characters", len(list))
	}
	out := make([]messaging.ID, len(list)/32)
	for i := range out {
		if _, err := hex.Decode(out[i][:], []byte(list[32*i:32*i+32])); err != nil {
			return nil, fmt.Errorf("webhook delivery event list: %w", err)
		}
	}
	return out, nil
}

const deliveryColumns = "d.id, d.endpoint_id, d.state, d.attempts, d.next_at, d.last_at, d.last_status, d.last_error, d.last_latency_us, " +
	"d.event_ids, d.events, e.id, e.company_id, e.type, e.subject_id, e.created_at, e.data, e.render, e.events"

// deliveryRow is a delivery as read, and whether its event's message is
// still to be described. A delivery of several events (events > 1) is
// read with its first, or with their pack; expand adds the others.
type deliveryRow struct {
	webhook.Delivery
	render   bool
	eventIDs string
	events   int
	// pack is the data of the delivery's event row when it holds
	// several events (see appendPacked); Event is then its first.
	pack []byte
}

func scanDelivery(row interface{ Scan(...any) error }) (deliveryRow, error) {
	var d deliveryRow
	var latency int64
	var data []byte
	var packed int
	err := row.Scan(&d.ID, &d.EndpointID, &d.State, &d.Attempts, timeDst{&d.NextAt}, timePtrDst{&d.LastAt}, &d.LastStatus,
		&d.LastError, &latency, &d.eventIDs, &d.events, &d.Event.ID, &d.Event.CompanyID, &d.Event.Type, &d.Event.Subject,
		timeDst{&d.Event.CreatedAt}, &data, &d.render, &packed)
	d.LastLatency = time.Duration(latency) * time.Microsecond
	if packed > 1 {
		d.pack = data
	} else {
		d.Event.Data = data
	}
	return d, err
}

// expand returns rows with each delivery of several events in as many
// rows, one an event in order, sharing the delivery's id and outcome.
// Events purged since are left out.
func (s *Store) expand(ctx context.Context, rows []deliveryRow) ([]deliveryRow, error) {
	// The events of a delivery are read from their pack, read with it;
	// those written one a row (before packs, or for a company with an
	// endpoint taking one event a request) were written by one
	// transaction, their ids made in order: each delivery's are read as
	// the range of its first and last id, through the primary key,
	// others in the range skipped.
	want := map[messaging.ID]bool{}
	var spans [][2]messaging.ID
	n := 0
	for _, d := range rows {
		n += max(d.events, 1)
		if d.eventIDs == "" || d.pack != nil {
			continue
		}
		ids, err := eventIDs(d.eventIDs)
		if err != nil {
			return nil, err
		}
		if len(ids) < 2 {
			continue
		}
		span := [2]messaging.ID{ids[0], ids[0]}
		for _, id := range ids {
			want[id] = true
			if compareIDs(id, span[0]) < 0 {
				span[0] = id
			}
			if compareIDs(id, span[1]) > 0 {
				span[1] = id
			}
		}
		spans = append(spans, span)
	}
	var events map[messaging.ID]packedEvent
	if len(spans) > 0 {
		var err error
		if events, err = s.readEventSpans(ctx, spans, want); err != nil {
			return nil, err
		}
	}
	out := make([]deliveryRow, 0, n)
	for _, d := range rows {
		if d.pack != nil {
			var err error
			if out, err = appendUnpacked(out, d); err != nil {
				return nil, err
			}
			continue
		}
		if d.eventIDs == "" {
			out = append(out, d)
			continue
		}
		ids, _ := eventIDs(d.eventIDs) // checked above
		for _, id := range ids {
			if id == d.Event.ID {
				out = append(out, d)
				continue
			}
			if e, ok := events[id]; ok {
				x := d
				x.Event, x.render = e.e, e.render
				out = append(out, x)
			}
		}
	}
	return out, nil
}

// appendUnpacked appends to out a row for each event of delivery d, read
// from its pack: those its event_ids list, in their order.
func appendUnpacked(out []deliveryRow, d deliveryRow) ([]deliveryRow, error) {
	packed, err := unpack(d.pack, d.Event.CompanyID)
	if err != nil {
		return nil, fmt.Errorf("webhook delivery %s: %w", d.ID, err)
	}
	d.pack = nil
	list := d.eventIDs
	if len(list) == 32*len(packed) { // the whole pack, as written
		whole := true
		for i := range packed {
			if !hexIs(list[32*i:32*i+32], packed[i].e.ID) {
				whole = false
				break
			}
		}
		if whole {
			for _, p := range packed {
				x := d
				x.Event, x.render = p.e, p.render
				out = append(out, x)
			}
			return out, nil
		}
	}
	ids, err := eventIDs(list)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		for _, p := range packed {
			if p.e.ID == id {
				x := d
				x.Event, x.render = p.e, p.render
				out = append(out, x)
				break
			}
		}
	}
	return out, nil
}

// hexIs reports whether h, 32 hex digits in lower case, is id.
func hexIs(h string, id messaging.ID) bool {
	const digits = "0123456789abcdef"
	for i, c := range id {
		if h[2*i] != digits[c>>4] || h[2*i+1] != digits[c&0xf] {
			return false
		}
	}
	return true
}

// readEventSpans reads the events of want, one a row, within spans of
// ids.
func (s *Store) readEventSpans(ctx context.Context, spans [][2]messaging.ID, want map[messaging.ID]bool) (map[messaging.ID]packedEvent, error) {
	slices.SortFunc(spans, func(a, b [2]messaging.ID) int { return compareIDs(a[0], b[0]) })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if compareIDs(sp[0], last[1]) <= 0 {
			if compareIDs(sp[1], last[1]) > 0 {
				last[1] = sp[1]
			}
			continue
		}
		merged = append(merged, sp)
	}
	events := make(map[messaging.ID]packedEvent, len(want))
	for _, sp := range merged {
		r, err := s.read.QueryContext(ctx, "SELECT id, company_id, type, subject_id, created_at, data, render FROM webhook_events "+
			"WHERE id >= ? AND id <= ? AND events = 1 ORDER BY id", s.id(sp[0]), s.id(sp[1]))
		if err != nil {
			return nil, fmt.Errorf("read the events of deliveries: %w", err)
		}
		err = func() error {
			defer r.Close()
			for r.Next() {
				var e packedEvent
				var data string
				if err := r.Scan(&e.e.ID, &e.e.CompanyID, &e.e.Type, &e.e.Subject, timeDst{&e.e.CreatedAt}, &data, &e.render); err != nil {
					return err
				}
				if want[e.e.ID] {
					e.e.Data = []byte(data)
					events[e.e.ID] = e
				}
			}
			return r.Err()
		}()
		if err != nil {
			return nil, fmt.Errorf("read the events of deliveries: %w", err)
		}
	}
	return events, nil
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

// WaitingDeliveries implements webhook.Outbox. It reads whole
// deliveries, oldest first, until they hold limit events, through a
// statement prepared once per read connection.
func (s *Store) WaitingDeliveries(ctx context.Context, endpointID messaging.ID, limit int) (_ []webhook.Delivery, err error) {
	defer keepUnavailable(&err)
	rows, err := s.readQuery(ctx, "SELECT "+deliveryColumns+" FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id "+
		"WHERE d.endpoint_id = ? AND d.state = 0 ORDER BY d.id LIMIT ?", s.id(endpointID), limit)
	if err != nil {
		return nil, fmt.Errorf("read waiting deliveries: %w", err)
	}
	got, err := collectEvents(rows, limit, scanDelivery)
	if err != nil {
		return nil, fmt.Errorf("read waiting deliveries: %w", err)
	}
	if got, err = s.expand(ctx, got); err != nil {
		return nil, err
	}
	return s.describe(ctx, got)
}

// collectEvents reads deliveries from rows until they hold at least
// limit events.
func collectEvents(rows *sql.Rows, limit int, scan func(interface{ Scan(...any) error }) (deliveryRow, error)) ([]deliveryRow, error) {
	defer rows.Close()
	var out []deliveryRow
	n := 0
	for n < limit && rows.Next() {
		d, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
		n += max(d.events, 1)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
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
	if err == nil {
		s.describeEvents.Store(len(out) > 0)
	}
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
// left for the next purge when the cut falls inside it). A row holding a
// pack of events goes whole, its events counted.
func (s *Store) PurgeEvents(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer keepUnavailable(&err)
	cut := s.id(idAt(before, 0))
	var n int
	err = s.write(ctx, "purge webhook events", func(tx *txn) error {
		n = 0
		rows, err := tx.QueryContext(ctx, "SELECT id, events FROM webhook_events WHERE id < ? ORDER BY id LIMIT ?", cut, limit)
		if err != nil {
			return fmt.Errorf("purge webhook events: %w", err)
		}
		var last messaging.ID
		taken := 0
		err = func() error {
			defer rows.Close()
			for n < limit && rows.Next() {
				var events int
				if err := rows.Scan(&last, &events); err != nil {
					return err
				}
				n += max(events, 1)
				taken++
			}
			return rows.Err()
		}()
		if err != nil {
			return fmt.Errorf("purge webhook events: %w", err)
		}
		if taken == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries "+
			"WHERE id < ? AND event_id <= ? ORDER BY id LIMIT ?)", cut, s.id(last), n*webhook.MaxEndpoints); err != nil {
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
// by endpoint and event. A delivery of several events lists each of them,
// the latest first.
func (s *Store) ListDeliveries(ctx context.Context, companyID, endpointID messaging.ID, page messaging.PageRequest) (_ []webhook.Delivery, _ int, err error) {
	defer keepUnavailable(&err)
	var batch int
	err = s.read.QueryRowContext(ctx, "SELECT batch_max_events FROM webhook_endpoints WHERE id = ? AND company_id = ?",
		s.id(endpointID), s.id(companyID)).Scan(&batch)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, webhook.NotFound(endpointID)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
	}
	var total int
	if err := s.read.QueryRowContext(ctx, "SELECT COALESCE(SUM(events), 0) FROM webhook_deliveries WHERE endpoint_id = ?",
		s.id(endpointID)).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
	}
	list := "SELECT " + deliveryColumns + " FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id " +
		"WHERE d.endpoint_id = ? ORDER BY d.event_id DESC, d.id DESC LIMIT ?"
	if batch == 0 { // a delivery an event, but those of the endpoint's batches before
		rows, err := s.read.QueryContext(ctx, list+" OFFSET ?", s.id(endpointID), page.PageSize, page.Offset())
		if err != nil {
			return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
		}
		got, err := collect(rows, scanDelivery)
		if err != nil {
			return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
		}
		if got, err = s.expand(ctx, got); err != nil {
			return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
		}
		out, err := s.describe(ctx, got[:min(len(got), page.PageSize)])
		return out, total, err
	}
	// Deliveries of several events: skip whole ones up to the page's
	// first event, then take the events of those it spans.
	rows, err := s.read.QueryContext(ctx, list, s.id(endpointID), page.Offset()+page.PageSize)
	if err != nil {
		return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
	}
	skip := page.Offset()
	var picked []deliveryRow
	err = func() error {
		defer rows.Close()
		taken := 0
		for taken < page.PageSize && rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				return err
			}
			n := max(d.events, 1)
			if len(picked) == 0 && skip >= n {
				skip -= n
				continue
			}
			picked = append(picked, d)
			taken += n
			if len(picked) == 1 {
				taken -= skip
			}
		}
		return rows.Err()
	}()
	if err != nil {
		return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
	}
	var events []deliveryRow
	for _, d := range picked {
		got, err := s.expand(ctx, []deliveryRow{d})
		if err != nil {
			return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
		}
		slices.Reverse(got)
		events = append(events, got...)
	}
	events = events[min(skip, len(events)):]
	out, err := s.describe(ctx, events[:min(len(events), page.PageSize)])
	return out, total, err
}

// Redeliver implements webhook.Store. The event's delivery waits again,
// due at now. When it is one of several events of a delivery: a delivery
// that waits is made due whole; one that does not is split, the event
// keeping the delivery's id (its place in order) and attempts, the other
// events the outcome they had, under a new id.
func (s *Store) Redeliver(ctx context.Context, companyID, endpointID, eventID messaging.ID, now time.Time) (err error) {
	defer keepUnavailable(&err)
	notFound := func() error { return messaging.NotFoundf("no delivery of event %s", eventID) }
	return s.write(ctx, "redeliver", func(tx *txn) error {
		want := hex.EncodeToString(eventID[:])
		res, err := tx.ExecContext(ctx, "UPDATE webhook_deliveries SET state = 0, next_at = ? WHERE endpoint_id = ? AND event_id = ? "+
			"AND events = 1 AND (event_ids = '' OR event_ids = ?) AND endpoint_id IN (SELECT id FROM webhook_endpoints WHERE company_id = ?)",
			s.ts(now), s.id(endpointID), s.id(eventID), want, s.id(companyID))
		if err != nil {
			return fmt.Errorf("redeliver: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		// one of several events of a delivery, whose first event is not
		// later than it, or an event of a pack
		rows, err := tx.QueryContext(ctx, "SELECT d.id, d.state, d.event_ids, d.event_id, COALESCE(e.events, 1) FROM webhook_deliveries d "+
			"JOIN webhook_endpoints w ON w.id = d.endpoint_id AND w.company_id = ? LEFT JOIN webhook_events e ON e.id = d.event_id "+
			"WHERE d.endpoint_id = ? AND d.event_id <= ? AND d.event_ids <> '' AND "+s.contains("d.event_ids")+" ORDER BY d.event_id DESC LIMIT 10",
			s.id(companyID), s.id(endpointID), s.id(eventID), want)
		if err != nil {
			return fmt.Errorf("redeliver: %w", err)
		}
		type found struct {
			id    messaging.ID
			state webhook.DeliveryState
			ids   []messaging.ID
			event messaging.ID // the delivery's event_id
			pack  bool         // whether event_id is a pack of its events
		}
		var hit *found
		err = func() error {
			defer rows.Close()
			for hit == nil && rows.Next() {
				var f found
				var list string
				var packed int
				if err := rows.Scan(&f.id, &f.state, &list, &f.event, &packed); err != nil {
					return err
				}
				f.pack = packed > 1
				if f.ids, err = eventIDs(list); err != nil {
					return err
				}
				if slices.Contains(f.ids, eventID) { // not a match across two ids
					hit = &f
				}
			}
			return rows.Err()
		}()
		if err != nil {
			return fmt.Errorf("redeliver: %w", err)
		}
		if hit == nil {
			return notFound()
		}
		if hit.state == webhook.Waiting || len(hit.ids) == 1 {
			_, err := tx.ExecContext(ctx, "UPDATE webhook_deliveries SET state = 0, next_at = ? WHERE id = ?", s.ts(now), s.id(hit.id))
			if err != nil {
				return fmt.Errorf("redeliver: %w", err)
			}
			return nil
		}
		// A delivery of a pack stays with its pack: its event_id names
		// the pack, its event_ids the events it holds.
		rest := slices.DeleteFunc(slices.Clone(hit.ids), func(id messaging.ID) bool { return id == eventID })
		list := make([]byte, 0, 32*len(rest))
		for _, id := range rest {
			list = hex.AppendEncode(list, id[:])
		}
		restEvent, event, eventList := rest[0], eventID, ""
		if hit.pack {
			restEvent, event, eventList = hit.event, hit.event, want
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO webhook_deliveries (id, endpoint_id, event_id, subject_id, state, attempts, next_at, "+
			"last_at, last_status, last_error, last_latency_us, event_ids, events) "+
			"SELECT "+s.idParam()+", endpoint_id, "+s.idParam()+", subject_id, state, attempts, next_at, last_at, last_status, last_error, "+
			"last_latency_us, CAST(? AS TEXT), CAST(? AS INTEGER) FROM webhook_deliveries WHERE id = ?", s.id(s.idGen.New()), s.id(restEvent), string(list), len(rest), s.id(hit.id)); err != nil {
			return fmt.Errorf("redeliver: %w", err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE webhook_deliveries SET event_id = ?, "+
			"subject_id = COALESCE((SELECT subject_id FROM webhook_events WHERE id = ?), subject_id), event_ids = ?, events = 1, state = 0, next_at = ? WHERE id = ?",
			s.id(event), s.id(eventID), eventList, s.ts(now), s.id(hit.id)); err != nil {
			return fmt.Errorf("redeliver: %w", err)
		}
		return nil
	})
}

// idParam is an argument of s.id read as an id where its type is not
// inferred, as in a SELECT list.
func (s *Store) idParam() string {
	if s.dialect == dialectSQLite {
		return "?"
	}
	return "CAST(? AS uuid)"
}

// contains is the condition that the text column col holds the text of
// the next argument.
func (s *Store) contains(col string) string {
	if s.dialect == dialectSQLite {
		return "instr(" + col + ", ?) > 0"
	}
	return "strpos(" + col + ", ?) > 0"
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
