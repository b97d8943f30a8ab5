package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/optout"
	"github.com/heraldhq/herald/webhook"
)

// partsKept is how long the parts of an incomplete inbound message wait
// for the others.
const partsKept = 24 * time.Hour

// RecordInboundPart implements inbound.Store. The parts of one message
// are recorded one transaction at a time: on Postgres, whose read
// committed transactions do not see each other's parts, a transaction
// level advisory lock keyed by the message's reference serialises them
// (SQLite has one writer). The parts of an assembled message are kept,
// so that a part the SMSC sends again after the others is recognised,
// until they are partsKept old.
func (s *Store) RecordInboundPart(ctx context.Context, p delivery.InboundPart, id messaging.ID) (_ *messaging.InboundMessage, err error) {
	defer keepUnavailable(&err)
	var out *messaging.InboundMessage
	err = s.write(ctx, "record an inbound part", func(tx *txn) error {
		out = nil
		text, parts := p.Text, 1
		if p.Count > 1 {
			var ok bool
			var err error
			if text, ok, err = s.assembleInbound(ctx, tx, p); err != nil || !ok {
				return err
			}
			parts = p.Count
		}
		m := &messaging.InboundMessage{ID: id, Phone: p.From, To: p.To, Text: text, Parts: parts, ReceivedAt: p.At}
		err := tx.QueryRowContext(ctx, "SELECT company_id FROM sms_senders WHERE sender_id = ? AND approved ORDER BY id LIMIT 1", p.To).Scan(&m.CompanyID)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("attribute an inbound message: %w", err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO inbound_messages (id, company_id, phone, dest, text, parts, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
			s.id(m.ID), s.nullID(m.CompanyID), m.Phone, m.To, m.Text, m.Parts, s.ts(m.ReceivedAt)); err != nil {
			return fmt.Errorf("store an inbound message: %w", err)
		}
		if !m.CompanyID.IsZero() {
			if err := s.applyKeyword(ctx, tx, m); err != nil {
				return err
			}
			subs, err := s.subscribers(ctx, tx, []messaging.ID{m.CompanyID}, webhook.MessageInbound)
			if err != nil {
				return err
			}
			if len(subs) > 0 {
				if err := s.writeEvents(ctx, tx, []webhook.Event{webhook.InboundEvent(s.idGen.New(), m, time.Now())}, subs); err != nil {
					return err
				}
			}
		}
		out = m
		return nil
	})
	return out, err
}

// assembleInbound records part p of a message of several parts and,
// when the message has them all with it, returns its text and true. A
// part recorded before is ignored. A part whose message was assembled
// already is the SMSC sending it again when its text is the one recorded;
// with another text, the handset reused the reference for a new message,
// which starts afresh.
func (s *Store) assembleInbound(ctx context.Context, tx *txn, p delivery.InboundPart) (string, bool, error) {
	if s.dialect == dialectPostgres {
		key := fmt.Sprintf("herald.inbound.%d.%d.%s.%s", p.Ref, p.Count, p.From, p.To)
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", key); err != nil {
			return "", false, fmt.Errorf("lock the inbound message's parts: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM inbound_parts WHERE received_at < ?", s.ts(p.At.Add(-partsKept))); err != nil {
		return "", false, fmt.Errorf("drop stale inbound parts: %w", err)
	}
	group := " FROM inbound_parts WHERE phone = ? AND dest = ? AND ref = ? AND count = ?"
	args := []any{p.From, p.To, p.Ref, p.Count}
	rows, err := tx.QueryContext(ctx, "SELECT seq, text"+group+" ORDER BY seq", args...)
	if err != nil {
		return "", false, fmt.Errorf("read inbound parts: %w", err)
	}
	texts := map[int]string{}
	for rows.Next() {
		var seq int
		var t string
		if err := rows.Scan(&seq, &t); err != nil {
			rows.Close()
			return "", false, fmt.Errorf("read inbound parts: %w", err)
		}
		texts[seq] = t
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return "", false, fmt.Errorf("read inbound parts: %w", err)
	}
	if len(texts) >= p.Count {
		if t, ok := texts[p.Seq]; ok && t == p.Text {
			return "", false, nil
		}
		if _, err := tx.ExecContext(ctx, "DELETE"+group, args...); err != nil {
			return "", false, fmt.Errorf("drop an assembled message's parts: %w", err)
		}
		clear(texts)
	}
	if _, ok := texts[p.Seq]; ok {
		return "", false, nil
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO inbound_parts (phone, dest, ref, count, seq, text, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
		p.From, p.To, p.Ref, p.Count, p.Seq, p.Text, s.ts(p.At)); err != nil {
		return "", false, fmt.Errorf("store an inbound part: %w", err)
	}
	texts[p.Seq] = p.Text
	if len(texts) < p.Count {
		return "", false, nil
	}
	var b strings.Builder
	for seq := 1; seq <= p.Count; seq++ {
		b.WriteString(texts[seq])
	}
	return b.String(), true, nil
}

const inboundColumns = "id, company_id, phone, dest, text, parts, received_at"

func scanInbound(row interface{ Scan(...any) error }) (messaging.InboundMessage, error) {
	var m messaging.InboundMessage
	err := row.Scan(&m.ID, &m.CompanyID, &m.Phone, &m.To, &m.Text, &m.Parts, timeDst{&m.ReceivedAt})
	return m, err
}

// ListInbound implements inbound.Store.
func (s *Store) ListInbound(ctx context.Context, companyID messaging.ID, f messaging.InboundFilter) (_ []messaging.InboundMessage, _ int, err error) {
	defer keepUnavailable(&err)
	where, args := " FROM inbound_messages WHERE company_id = ?", []any{s.id(companyID)}
	if f.Phone != "" {
		where += " AND phone = ?"
		args = append(args, f.Phone)
	}
	var total int
	if err := s.read.QueryRowContext(ctx, "SELECT COUNT(*)"+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("list inbound messages: %w", err)
	}
	rows, err := s.read.QueryContext(ctx, "SELECT "+inboundColumns+where+" ORDER BY id DESC LIMIT ? OFFSET ?",
		append(args, f.PageSize, f.Offset())...)
	if err != nil {
		return nil, 0, fmt.Errorf("list inbound messages: %w", err)
	}
	out, err := collect(rows, scanInbound)
	if err != nil {
		return nil, 0, fmt.Errorf("list inbound messages: %w", err)
	}
	return out, total, nil
}

// applyKeyword opts the sender of m out, or back in, when its text is a
// keyword (optout.Classify), in the transaction that stores it: a STOP
// stored is a STOP applied.
func (s *Store) applyKeyword(ctx context.Context, tx *txn, m *messaging.InboundMessage) error {
	k, own, err := s.keywords(ctx, tx.QueryRowContext(ctx, "SELECT out_words, in_words FROM opt_out_keywords WHERE company_id = ?", s.id(m.CompanyID)))
	if err != nil {
		return err
	}
	if !own {
		k = optout.DefaultKeywords()
	}
	switch optout.Classify(m.Text, k) {
	case optout.OptOutAction:
		res, err := tx.ExecContext(ctx, "INSERT INTO opt_outs (company_id, phone, scope, source, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
			s.id(m.CompanyID), m.Phone, string(optout.All), string(optout.FromKeyword), s.ts(m.ReceivedAt))
		if err != nil {
			return fmt.Errorf("opt out: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			if err := s.emitOptOut(ctx, tx, m.CompanyID, m.Phone, optout.All, optout.FromKeyword, true, m.ReceivedAt); err != nil {
				return err
			}
			return s.failPendingOf(ctx, tx, m.CompanyID, m.Phone, optout.All, m.ReceivedAt)
		}
	case optout.OptInAction:
		res, err := tx.ExecContext(ctx, "DELETE FROM opt_outs WHERE company_id = ? AND phone = ? AND scope = ?",
			s.id(m.CompanyID), m.Phone, string(optout.All))
		if err != nil {
			return fmt.Errorf("opt in: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return s.emitOptOut(ctx, tx, m.CompanyID, m.Phone, optout.All, optout.FromKeyword, false, m.ReceivedAt)
		}
	}
	return nil
}
