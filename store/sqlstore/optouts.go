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
	"github.com/heraldhq/herald/optout"
	"github.com/heraldhq/herald/webhook"
)

// AddOptOut implements optout.Store.
func (s *Store) AddOptOut(ctx context.Context, o optout.OptOut) (_ bool, err error) {
	defer keepUnavailable(&err)
	var added bool
	err = s.write(ctx, "add an opt-out", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "INSERT INTO opt_outs (company_id, phone, scope, source, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
			s.id(o.CompanyID), o.Phone, string(o.Scope), string(o.Source), s.ts(o.CreatedAt))
		if err != nil {
			return fmt.Errorf("add an opt-out: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("add an opt-out: %w", err)
		}
		added = n == 1
		if !added {
			return nil
		}
		if err := s.emitOptOut(ctx, tx, o.CompanyID, o.Phone, o.Scope, o.Source, true, o.CreatedAt); err != nil {
			return err
		}
		return s.failPendingOf(ctx, tx, o.CompanyID, o.Phone, o.Scope, o.CreatedAt)
	})
	return added, err
}

// RemoveOptOut implements optout.Store.
func (s *Store) RemoveOptOut(ctx context.Context, companyID messaging.ID, phone string, scope optout.Scope, source optout.Source, at time.Time) (_ bool, err error) {
	defer keepUnavailable(&err)
	var removed bool
	err = s.write(ctx, "remove an opt-out", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM opt_outs WHERE company_id = ? AND phone = ? AND scope = ?", s.id(companyID), phone, string(scope))
		if err != nil {
			return fmt.Errorf("remove an opt-out: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("remove an opt-out: %w", err)
		}
		removed = n == 1
		if !removed {
			return nil
		}
		return s.emitOptOut(ctx, tx, companyID, phone, scope, source, false, at)
	})
	return removed, err
}

// emitOptOut writes the optout.changed event of a change when the company
// subscribes to it.
func (s *Store) emitOptOut(ctx context.Context, tx *txn, companyID messaging.ID, phone string, scope optout.Scope, source optout.Source, out bool, at time.Time) error {
	subs, err := s.subscribers(ctx, tx, []messaging.ID{companyID}, webhook.OptOutChanged)
	if err != nil || len(subs) == 0 {
		return err
	}
	ev := webhook.OptOutEvent(s.idGen.New(), companyID, phone, string(scope), string(source), out, at)
	return s.writeEvents(ctx, tx, []webhook.Event{ev}, subs)
}

func scanOptOut(row interface{ Scan(...any) error }) (optout.OptOut, error) {
	var o optout.OptOut
	var scope, source string
	err := row.Scan(&o.CompanyID, &o.Phone, &scope, &source, timeDst{&o.CreatedAt})
	o.Scope, o.Source = optout.Scope(scope), optout.Source(source)
	return o, err
}

// ListOptOuts implements optout.Store.
func (s *Store) ListOptOuts(ctx context.Context, companyID messaging.ID, f optout.Filter) (_ []optout.OptOut, _ int, err error) {
	defer keepUnavailable(&err)
	where, args := " FROM opt_outs WHERE company_id = ?", []any{s.id(companyID)}
	if f.Phone != "" {
		where += " AND phone = ?"
		args = append(args, f.Phone)
	}
	var total int
	if err := s.read.QueryRowContext(ctx, "SELECT COUNT(*)"+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("list opt-outs: %w", err)
	}
	rows, err := s.read.QueryContext(ctx, "SELECT company_id, phone, scope, source, created_at"+where+
		" ORDER BY created_at DESC, phone, scope LIMIT ? OFFSET ?", append(args, f.PageSize, f.Offset())...)
	if err != nil {
		return nil, 0, fmt.Errorf("list opt-outs: %w", err)
	}
	out, err := collect(rows, scanOptOut)
	if err != nil {
		return nil, 0, fmt.Errorf("list opt-outs: %w", err)
	}
	return out, total, nil
}

// OptedOut implements optout.Store: the numbers are looked up by the
// primary key, a thousand at a time.
func (s *Store) OptedOut(ctx context.Context, companyID messaging.ID, phones []string, ch messaging.Channel) (_ map[string]bool, err error) {
	defer keepUnavailable(&err)
	scopes := "'All'"
	if ch == messaging.ChannelChat {
		scopes = "'All', 'Chat'"
	}
	out := map[string]bool{}
	var any int
	err = s.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT 1 FROM opt_outs WHERE company_id = ? LIMIT 1) o", s.id(companyID)).Scan(&any)
	if err != nil {
		return nil, fmt.Errorf("read opt-outs: %w", err)
	}
	if any == 0 { // a company without opt-outs: nothing to look up
		return out, nil
	}
	for chunk := range slices.Chunk(phones, 1000) {
		j := s.newJSONRows(len(chunk))
		for i, p := range chunk {
			if i > 0 {
				j.b = append(j.b, ',')
			}
			j.cols = 0
			j.text(p)
		}
		rows, err := s.read.QueryContext(ctx, "SELECT phone FROM opt_outs WHERE company_id = ? AND scope IN ("+scopes+") AND "+
			s.jsonTextsIn("phone"), s.id(companyID), string(j.b)+"]")
		if err != nil {
			return nil, fmt.Errorf("read opt-outs: %w", err)
		}
		for rows.Next() {
			var p string
			if err := rows.Scan(&p); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read opt-outs: %w", err)
			}
			out[p] = true
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("read opt-outs: %w", err)
		}
	}
	return out, nil
}

// Keywords implements optout.Store.
func (s *Store) Keywords(ctx context.Context, companyID messaging.ID) (_ optout.Keywords, _ bool, err error) {
	defer keepUnavailable(&err)
	return s.keywords(ctx, s.read.QueryRowContext(ctx, "SELECT out_words, in_words FROM opt_out_keywords WHERE company_id = ?", s.id(companyID)))
}

// keywords reads a row of opt_out_keywords.
func (s *Store) keywords(_ context.Context, row *sql.Row) (optout.Keywords, bool, error) {
	var out, in string
	err := row.Scan(&out, &in)
	if errors.Is(err, sql.ErrNoRows) {
		return optout.Keywords{}, false, nil
	}
	if err != nil {
		return optout.Keywords{}, false, fmt.Errorf("read keywords: %w", err)
	}
	return optout.Keywords{Out: splitWords(out), In: splitWords(in)}, true, nil
}

func splitWords(s string) []string {
	out := []string{}
	for w := range strings.SplitSeq(s, ",") {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// SetKeywords implements optout.Store.
func (s *Store) SetKeywords(ctx context.Context, companyID messaging.ID, k optout.Keywords) (err error) {
	defer keepUnavailable(&err)
	_, err = s.db.ExecContext(ctx, "INSERT INTO opt_out_keywords (company_id, out_words, in_words) VALUES (?, ?, ?) "+
		"ON CONFLICT (company_id) DO UPDATE SET out_words = excluded.out_words, in_words = excluded.in_words",
		s.id(companyID), strings.Join(k.Out, ","), strings.Join(k.In, ","))
	if err != nil {
		return fmt.Errorf("set keywords: %w", err)
	}
	return nil
}

// failPendingOf ends Failed (DetailsOptedOut) the company's Pending
// messages to phone that scope covers, in the opt-out's transaction:
// those not handed to a provider yet are never sent. They are found
// through the index by number, and written as the dispatcher's updates
// are (counters, events).
func (s *Store) failPendingOf(ctx context.Context, tx *txn, companyID messaging.ID, phone string, scope optout.Scope, at time.Time) error {
	q := "SELECT id FROM messages WHERE company_id = ? AND phone = ? AND status = 'Pending'"
	if scope == optout.Chat {
		q += " AND channel = 'Chat'"
	}
	rows, err := tx.QueryContext(ctx, q, s.id(companyID), phone)
	if err != nil {
		return fmt.Errorf("find the pending messages of an opted-out number: %w", err)
	}
	var ids []messaging.ID
	for rows.Next() {
		var id messaging.ID
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("find the pending messages of an opted-out number: %w", err)
		}
		ids = append(ids, id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("find the pending messages of an opted-out number: %w", err)
	}
	if len(ids) == 0 {
		return nil
	}
	slicesSortIDs(ids)
	states, err := s.lockMessages(ctx, tx, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if st := states[id]; st != nil {
			st.changed = st.apply(delivery.StatusUpdate{MessageID: id, Status: messaging.StatusFailed, At: at, Details: campaign.DetailsOptedOut}, at)
		}
	}
	return s.writeStates(ctx, tx, states)
}
