package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// SMS parts and receipts live in one table, sms_parts, keyed by the
// provider's part id. ApplyUpdates inserts a row per part when a message
// goes Sent. ApplyReceipts writes the receipt of a part of a long message
// into the part's row; the receipt of a part not recorded yet goes into a
// row without a message (message_id NULL), kept until ApplyUpdates records
// the part. Both are upserts on the primary key, so that a receipt and the
// recording of its part that race each other meet on one row: on Postgres
// the second upsert waits for the first to commit and then sees its row;
// on SQLite the single writer orders them.
//
// On Postgres that wait must not close a cycle. Processes sharing one SMPP
// account get the receipts of each other's parts: a batch records its own
// parts and keeps receipts of parts another batch is recording, in a
// transaction still open, while that batch keeps receipts of ours. So a
// transaction writes all its new rows, parts and kept receipts, in one
// statement, in provider id order: two transactions then take the rows
// they share in the same order, and the one that comes second waits for
// the first to commit instead of holding a row the first one needs.

// partChunk is how many part rows one upsert statement writes.
const partChunk = 1000

// sentParts are the parts of one message recorded Sent.
type sentParts struct {
	message messaging.ID
	ids     []string
	at      time.Time
	update  int // index of the update recording them
}

// partRow is a part's row as an upsert returned it.
type partRow struct {
	providerID string
	message    messaging.ID // zero: the part is not recorded yet
	count      int
	state      string // "" while no final receipt
	err        string
	doneAt     time.Time
}

// recordParts inserts the parts of messages just recorded Sent, with the
// receipts of index keep (of parts unknown when read: not recorded yet),
// and applies to states the receipts that were waiting for the parts. The
// parts' rows go into recorded, and the rows the kept receipts were
// written into (kept, or the part's own when it was recorded since it was
// read) into taken, by part id. Rows are written in provider id order (see
// the top of this file).
//
// then[k] is set to the status the receipts waiting for the parts moved
// the message of the update of index k to.
func (s *Store) recordParts(ctx context.Context, tx *txn, states map[messaging.ID]*messageState, sent []sentParts,
	receipts []delivery.Receipt, keep []int, now time.Time, recorded, taken map[string]partRow, then []messaging.MessageStatus) error {
	type row struct {
		pid     string
		message messaging.ID
		index   int
		count   int
		at      time.Time
		receipt int // of a kept receipt's row; -1 for a part's
	}
	byPID := map[string]int{}
	updateOf := make(map[messaging.ID]int, len(sent))
	var rows []row
	for _, sp := range sent {
		updateOf[sp.message] = sp.update
		for i, pid := range sp.ids {
			r := row{pid, sp.message, i, len(sp.ids), sp.at, -1}
			if k, ok := byPID[pid]; ok { // an id given twice: the last one wins
				rows[k] = r
				continue
			}
			byPID[pid] = len(rows)
			rows = append(rows, r)
		}
	}
	for _, i := range keep { // ids of other parts, one receipt each
		rows = append(rows, row{pid: receipts[i].ProviderID, receipt: i})
	}
	if len(rows) == 0 {
		return nil
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.pid, b.pid) })
	partIndex := make(map[string]int, len(rows))
	var early []partRow
	q := s.queries().recordParts
	for chunk := range slices.Chunk(rows, partChunk) {
		batch := s.newJSONRows(len(chunk))
		kept := false
		for _, r := range chunk {
			if r.receipt < 0 {
				partIndex[r.pid] = r.index
				batch.row().text(r.pid).id(r.message).int(int64(r.index)).int(int64(r.count)).null().text("").null().ts(r.at)
				continue
			}
			kept = true
			rc := receipts[r.receipt]
			batch.row().text(r.pid).null().int(0).int(0).text(rc.State).text(rc.Err).ts(rc.At).ts(now)
		}
		if s.dialect == dialectSQLite && !kept {
			// Under SQLite's one writer no row can appear between a read
			// and a write of this transaction: when none of the part ids
			// has a row (the usual case: no early receipt, no id given
			// again), an insert that skips the ids holding a row inserts
			// them all, without returning each row. Otherwise the upsert
			// below writes the chunk again, the rows just inserted
			// included: it leaves them as they are.
			res, err := s.rawExec(ctx, tx, s.queries().partsInsert, batch.String())
			if err != nil {
				return fmt.Errorf("record sms parts: %w", err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("record sms parts: %w", err)
			}
			if n == int64(len(chunk)) {
				for _, r := range chunk {
					recorded[r.pid] = partRow{providerID: r.pid, message: r.message, count: r.count}
				}
				continue
			}
		}
		rs, err := s.rawQuery(ctx, tx, q, batch.String())
		if err != nil {
			return fmt.Errorf("record sms parts: %w", err)
		}
		got, err := collect(rs, scanPartRow)
		if err != nil {
			return fmt.Errorf("record sms parts: %w", err)
		}
		for _, p := range got {
			if _, part := partIndex[p.providerID]; !part {
				taken[p.providerID] = p
				continue
			}
			recorded[p.providerID] = p
			if p.state != "" {
				early = append(early, p)
			}
		}
	}
	if len(early) == 0 {
		return nil
	}
	// Apply the early receipts message by message, in part order.
	slices.SortFunc(early, func(a, b partRow) int {
		if c := compareIDs(a.message, b.message); c != 0 {
			return c
		}
		return partIndex[a.providerID] - partIndex[b.providerID]
	})
	var before []delivery.PartReceipt
	for i, p := range early {
		if i == 0 || early[i-1].message != p.message {
			before = before[:0]
		}
		last := delivery.PartReceipt{State: p.state, Err: p.err, At: p.doneAt}
		if u, ok := delivery.PartsUpdate(p.message, p.count, before, last); ok {
			// recorded with the send it waited for
			if st := states[p.message]; st != nil && st.apply(u, st.UpdatedAt) {
				st.changed = true
				then[updateOf[p.message]] = u.Status
			}
		}
		before = append(before, last)
	}
	return nil
}

func scanPartRow(row interface{ Scan(...any) error }) (partRow, error) {
	var p partRow
	var message nullID
	err := row.Scan(&p.providerID, &message, &p.count, textDst{&p.state}, &p.err, timeDst{&p.doneAt})
	p.message = message.id
	return p, err
}

// nullID scans a nullable id; NULL is the zero id.
type nullID struct{ id messaging.ID }

func (d *nullID) Scan(src any) error {
	if src == nil {
		d.id = messaging.ID{}
		return nil
	}
	return d.id.Scan(src)
}

// ApplyReceipts implements delivery.Store.
func (s *Store) ApplyReceipts(ctx context.Context, receipts []delivery.Receipt, now time.Time) (_ []delivery.ReceiptOutcome, err error) {
	defer keepUnavailable(&err)
	br, err := s.ApplyBatch(ctx, nil, receipts, now)
	return br.Outcomes, err
}

// ApplyBatch implements delivery.Store: one transaction locks the messages
// of the updates, applies them, reads the parts the receipts name, writes
// the parts of the SMS gone Sent with the receipts of parts not found (one
// statement, in provider id order), then applies the other receipts
// (locking the messages they name that the updates did not), and writes
// every changed message in one statement.
//
// The receipt of a part of a one-part message is not written into the
// part's row: the message's status records it (a final status makes any
// later receipt a duplicate). The receipts of parts of long messages are,
// so that the message is Delivered once every part is; and so are those of
// parts not recorded yet, kept in a row of their own until ApplyUpdates
// records the part.
func (s *Store) ApplyBatch(ctx context.Context, updates []delivery.StatusUpdate, receipts []delivery.Receipt, now time.Time) (_ delivery.BatchResult, err error) {
	defer keepUnavailable(&err)
	res := delivery.BatchResult{
		Applied: make([]bool, len(updates)), Then: make([]messaging.MessageStatus, len(updates)),
		Outcomes: make([]delivery.ReceiptOutcome, len(receipts)), Moved: make([]messaging.MessageStatus, len(receipts)),
	}
	out := res.Outcomes
	// The first final receipt of each part is a candidate; the others are
	// duplicates whatever the database holds.
	first := map[string]int{}
	var cand []int
	for i, r := range receipts {
		out[i] = delivery.ReceiptIgnored
		if st, _ := delivery.ReceiptStatus(r.State); st == "" {
			continue
		}
		if _, ok := first[r.ProviderID]; ok {
			out[i] = delivery.ReceiptDuplicate
			continue
		}
		first[r.ProviderID] = i
		cand = append(cand, i)
	}
	if len(updates) == 0 && len(cand) == 0 {
		return res, nil
	}
	ids := updatedIDs(updates)
	s.prepareQueries(ctx)
	err = s.write(ctx, "apply status updates and receipts", func(tx *txn) error {
		return s.applyBatchTx(ctx, tx, updates, ids, receipts, cand, first, now, &res)
	})
	if err != nil {
		return delivery.BatchResult{}, err
	}
	return res, nil
}

// updatedIDs returns the distinct messages of updates, sorted: the order
// in which a batch locks them.
func updatedIDs(updates []delivery.StatusUpdate) []messaging.ID {
	ids := make([]messaging.ID, len(updates))
	for i, u := range updates {
		ids[i] = u.MessageID
	}
	slicesSortIDs(ids)
	return slices.Compact(ids)
}

// applyBatchTx is the transaction of ApplyBatch: ids are the sorted
// distinct messages of updates, cand the receipts that are the first
// final one of their part (first maps the part to it). It clears res
// first, so that a retried transaction starts afresh.
func (s *Store) applyBatchTx(ctx context.Context, tx *txn, updates []delivery.StatusUpdate, ids []messaging.ID,
	receipts []delivery.Receipt, cand []int, first map[string]int, now time.Time, res *delivery.BatchResult) error {
	applied := res.Applied
	clear(applied)
	clear(res.Then)
	clear(res.Moved)
	clear(res.DeliveredAfter)
	clear(res.MovedAfter)
	states := map[messaging.ID]*messageState{}
	var sent []sentParts
	if len(ids) > 0 {
		var err error
		if states, err = s.lockMessages(ctx, tx, ids); err != nil {
			return err
		}
		sent = applyUpdates(states, updates, applied)
	}
	// The rows of the parts the receipts name, but for the parts this
	// batch records: the receipts of parts not found are kept.
	var known map[string]partRow
	var unknown []int
	if len(cand) > 0 {
		var err error
		if known, unknown, err = s.readReceiptParts(ctx, tx, receipts, cand, sent); err != nil {
			return err
		}
	}
	// The part rows this transaction wrote, and those the receipts
	// kept were written into.
	recorded, taken := map[string]partRow{}, map[string]partRow{}
	if err := s.recordParts(ctx, tx, states, sent, receipts, unknown, now, recorded, taken, res.Then); err != nil {
		return err
	}
	deliveredAfter(states, updates, res)
	if len(cand) > 0 {
		if err := s.applyReceipts(ctx, tx, states, known, recorded, taken, receipts, cand, first, now, res); err != nil {
			return err
		}
	}
	if err := s.cancelRetries(ctx, tx, states, updates, applied); err != nil {
		return err
	}
	return s.writeStates(ctx, tx, states)
}

// deliveredAfter sets res.DeliveredAfter for the updates that moved their
// messages to Delivered, themselves or by the receipts of res.Then.
func deliveredAfter(states map[messaging.ID]*messageState, updates []delivery.StatusUpdate, res *delivery.BatchResult) {
	for i, u := range updates {
		if !res.Applied[i] || (u.Status != messaging.StatusDelivered && res.Then[i] != messaging.StatusDelivered) {
			continue
		}
		if res.DeliveredAfter == nil {
			res.DeliveredAfter = make([]time.Duration, len(updates))
		}
		res.DeliveredAfter[i] = states[u.MessageID].DeliveredAfter()
	}
}

// readReceiptParts reads the rows of the parts the candidate receipts
// name, but for the parts of sent, and returns them with the candidates
// whose part has no row.
func (s *Store) readReceiptParts(ctx context.Context, tx *txn, receipts []delivery.Receipt, cand []int, sent []sentParts) (map[string]partRow, []int, error) {
	recording := map[string]bool{}
	for _, sp := range sent {
		for _, pid := range sp.ids {
			recording[pid] = true
		}
	}
	var read []int
	for _, i := range cand {
		if !recording[receipts[i].ProviderID] {
			read = append(read, i)
		}
	}
	known, err := s.readParts(ctx, tx, receipts, read)
	if err != nil {
		return nil, nil, err
	}
	var unknown []int
	for _, i := range read {
		if _, ok := known[receipts[i].ProviderID]; !ok {
			unknown = append(unknown, i)
		}
	}
	return known, unknown, nil
}

// applyReceipts applies the candidate receipts (the first final one of
// each part) to the parts and to states, locking the messages not in
// states yet. known holds the rows read of their parts, recorded the rows
// of the parts this batch recorded, taken the rows recordParts wrote the
// receipts of unknown parts into.
func (s *Store) applyReceipts(ctx context.Context, tx *txn, states map[messaging.ID]*messageState, known, recorded, taken map[string]partRow,
	receipts []delivery.Receipt, cand []int, first map[string]int, now time.Time, res *delivery.BatchResult) error {
	out, moved := res.Outcomes, res.Moved
	for _, i := range cand {
		out[i] = delivery.ReceiptDuplicate
		if p, ok := recorded[receipts[i].ProviderID]; ok {
			known[p.providerID] = p
		}
	}
	// taken gets the part rows the receipts were written into (or, for
	// one-part messages, that they apply to).
	var multi []int
	for _, i := range cand {
		p, ok := known[receipts[i].ProviderID]
		switch {
		case !ok: // unknown: written by recordParts, into taken if at all
		case p.message.IsZero() || p.state != "": // a kept receipt, or a part with its receipt
		case p.count <= 1:
			r := receipts[i]
			p.state, p.err, p.doneAt = r.State, r.Err, r.At
			taken[p.providerID] = p
		default:
			multi = append(multi, i)
		}
	}
	// Parts of long messages take the receipt unless they hold one; a
	// concurrent receipt of the same part may have written it since it
	// was read.
	if err := s.updateReceipts(ctx, tx, receipts, multi, now, taken); err != nil {
		return err
	}
	var ids, long []messaging.ID
	for _, i := range cand {
		p, ok := taken[receipts[i].ProviderID]
		switch {
		case !ok:
		case p.message.IsZero():
			out[i] = delivery.ReceiptQueued
		default:
			ids = append(ids, p.message)
			if p.count > 1 {
				long = append(long, p.message)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	// Messages not locked by the updates of the batch.
	var lock []messaging.ID
	for _, id := range ids {
		if _, ok := states[id]; !ok {
			lock = append(lock, id)
		}
	}
	if len(lock) > 0 {
		slicesSortIDs(lock)
		lock = slices.Compact(lock)
		more, err := s.lockMessages(ctx, tx, lock)
		if err != nil {
			return err
		}
		for id, st := range more {
			states[id] = st
		}
	}
	// Receipts of the other parts of long messages, read once the
	// messages are locked so that concurrent receipts of one message
	// see each other.
	others, err := s.partReceipts(ctx, tx, long)
	if err != nil {
		return err
	}
	for _, i := range cand {
		p, ok := taken[receipts[i].ProviderID]
		if !ok || p.message.IsZero() {
			continue
		}
		st := states[p.message]
		if p.count <= 1 && st != nil && st.Status.Final() {
			continue // a one-part message already settled: a duplicate
		}
		var recorded []delivery.PartReceipt
		for _, o := range others[p.message] {
			// Parts whose receipt comes later in this batch are not
			// counted yet.
			if k, inBatch := first[o.providerID]; o.providerID == p.providerID || (inBatch && k > i && taken[o.providerID].message == p.message) {
				continue
			}
			recorded = append(recorded, delivery.PartReceipt{State: o.state, Err: o.err, At: o.doneAt})
		}
		last := delivery.PartReceipt{State: p.state, Err: p.err, At: p.doneAt}
		u, decided := delivery.PartsUpdate(p.message, p.count, recorded, last)
		if !decided {
			out[i] = delivery.ReceiptPartial
			continue
		}
		out[i] = delivery.ReceiptApplied
		if st != nil && st.apply(u, now) {
			st.changed = true
			moved[i] = u.Status
			if u.Status == messaging.StatusDelivered {
				if res.MovedAfter == nil {
					res.MovedAfter = make([]time.Duration, len(receipts))
				}
				res.MovedAfter[i] = st.DeliveredAfter()
			}
		}
	}
	return nil
}

// readParts reads the rows of the parts the receipts name.
func (s *Store) readParts(ctx context.Context, tx *txn, receipts []delivery.Receipt, cand []int) (map[string]partRow, error) {
	known := make(map[string]partRow, len(cand))
	for chunk := range slices.Chunk(cand, partChunk) {
		pids := make([]string, len(chunk))
		for k, i := range chunk {
			pids[k] = receipts[i].ProviderID
		}
		rs, err := s.rawQuery(ctx, tx, s.queries().readParts, jsonStrings(pids))
		if err != nil {
			return nil, fmt.Errorf("read sms parts: %w", err)
		}
		got, err := collect(rs, scanPartRow)
		if err != nil {
			return nil, fmt.Errorf("read sms parts: %w", err)
		}
		for _, p := range got {
			known[p.providerID] = p
		}
	}
	return known, nil
}

// updateReceipts writes receipts into their parts' rows, unless a row
// holds a receipt already; the rows written go into taken.
func (s *Store) updateReceipts(ctx context.Context, tx *txn, receipts []delivery.Receipt, idx []int, now time.Time, taken map[string]partRow) error {
	if len(idx) == 0 {
		return nil
	}
	q := s.queries().receiptsUpdate
	for chunk := range slices.Chunk(idx, partChunk) {
		batch := s.newJSONRows(len(chunk))
		for _, i := range chunk {
			r := receipts[i]
			batch.row().text(r.ProviderID).text(r.State).text(r.Err).ts(r.At).ts(now)
		}
		rs, err := s.rawQuery(ctx, tx, q, batch.String())
		if err != nil {
			return fmt.Errorf("store receipts: %w", err)
		}
		got, err := collect(rs, scanPartRow)
		if err != nil {
			return fmt.Errorf("store receipts: %w", err)
		}
		for _, p := range got {
			taken[p.providerID] = p
		}
	}
	return nil
}

// partReceipts reads the parts with a final receipt of the given long
// messages.
func (s *Store) partReceipts(ctx context.Context, tx *txn, ids []messaging.ID) (map[messaging.ID][]partRow, error) {
	out := map[messaging.ID][]partRow{}
	if len(ids) == 0 {
		return out, nil
	}
	slicesSortIDs(ids)
	ids = slices.Compact(ids)
	for chunk := range slices.Chunk(ids, 1000) {
		rs, err := s.rawQuery(ctx, tx, s.queries().partReceipts, s.jsonIDs(chunk))
		if err != nil {
			return nil, fmt.Errorf("read part receipts: %w", err)
		}
		got, err := collect(rs, scanPartRow)
		if err != nil {
			return nil, fmt.Errorf("read part receipts: %w", err)
		}
		for _, p := range got {
			out[p.message] = append(out[p.message], p)
		}
	}
	return out, nil
}

// ChatSeqs implements delivery.Store: numbers come from the chat_seq
// sequence on Postgres and from the counters table on SQLite; both start
// at the time the schema was created, in microseconds since the epoch.
func (s *Store) ChatSeqs(ctx context.Context, ids []messaging.ID) (_ []int64, err error) {
	defer keepUnavailable(&err)
	out := make([]int64, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	uniq := slices.Clone(ids)
	slicesSortIDs(uniq)
	uniq = slices.Compact(uniq)
	err = s.write(ctx, "assign chat sequence numbers", func(tx *txn) error {
		seqs := make(map[messaging.ID]int64, len(uniq))
		for chunk := range slices.Chunk(uniq, 1000) {
			if s.dialect == dialectPostgres {
				if _, err := tx.ExecContext(ctx, "UPDATE messages SET chat_seq = nextval('chat_seq') WHERE id IN (?) AND chat_seq IS NULL",
					bun.In(s.ids(chunk))); err != nil {
					return fmt.Errorf("assign: %w", err)
				}
			}
			rs, err := tx.QueryContext(ctx, "SELECT id, chat_seq FROM messages WHERE id IN (?)", bun.In(s.ids(chunk)))
			if err != nil {
				return fmt.Errorf("read: %w", err)
			}
			for rs.Next() {
				var id messaging.ID
				var seq sql.NullInt64
				if err := rs.Scan(&id, &seq); err != nil {
					rs.Close()
					return fmt.Errorf("read: %w", err)
				}
				seqs[id] = seq.Int64
			}
			if err := rs.Close(); err != nil {
				return fmt.Errorf("read: %w", err)
			}
			if err := rs.Err(); err != nil {
				return fmt.Errorf("read: %w", err)
			}
		}
		if s.dialect == dialectSQLite {
			if err := s.assignSQLiteSeqs(ctx, tx, uniq, seqs); err != nil {
				return err
			}
		}
		for i, id := range ids {
			out[i] = seqs[id]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// assignSQLiteSeqs numbers the messages of seqs that have 0, in id order,
// from the counter.
func (s *Store) assignSQLiteSeqs(ctx context.Context, tx *txn, ids []messaging.ID, seqs map[messaging.ID]int64) error {
	var missing []messaging.ID
	for _, id := range ids {
		if seq, ok := seqs[id]; ok && seq == 0 {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var last int64
	if err := tx.QueryRowContext(ctx, "UPDATE counters SET value = value + ? WHERE name = 'chat_seq' RETURNING value",
		len(missing)).Scan(&last); err != nil {
		return fmt.Errorf("take sequence numbers: %w", err)
	}
	next := last - int64(len(missing))
	// The numbers go in as a JSON batch, like the other delivery writes. A
	// VALUES list of a few hundred rows made SQLite's planner scan the
	// whole messages index against it instead of looking each id up, a
	// cost that grew with the table.
	j := s.newJSONRows(len(missing))
	for _, id := range missing {
		next++
		seqs[id] = next
		j.row().id(id).int(next)
	}
	if _, err := s.rawExec(ctx, tx, sqliteAssignSeqs, j.String()); err != nil {
		return fmt.Errorf("assign: %w", err)
	}
	return nil
}

// sqliteAssignSeqs writes the chat_seq of the messages of a JSON batch of
// [id, seq] rows.
const sqliteAssignSeqs = "WITH v AS (SELECT unhex(j.value ->> 0) AS id, j.value ->> 1 AS seq " +
	"FROM (SELECT value FROM json_each(?) LIMIT -1) AS j) " +
	"UPDATE messages SET chat_seq = v.seq FROM v WHERE messages.id = v.id"

// purgeParts deletes the oldest SMS parts (and kept receipts) recorded
// before a time, up to a limit, through their index by creation time.
const purgeParts = "DELETE FROM sms_parts WHERE provider_id IN (SELECT provider_id FROM sms_parts " +
	"WHERE created_at < ? ORDER BY created_at LIMIT ?)"

// PurgeReceipts implements delivery.Store. On Postgres the batch is read
// through the index in order, as a purge of messages is (purgeSettings).
func (s *Store) PurgeReceipts(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer keepUnavailable(&err)
	if limit <= 0 {
		return 0, nil
	}
	var n int64
	err = s.write(ctx, "purge receipts", func(tx *txn) error {
		if s.dialect == dialectPostgres {
			if _, err := tx.ExecContext(ctx, purgeSettings); err != nil {
				return fmt.Errorf("purge sms parts: %w", err)
			}
		}
		res, err := tx.ExecContext(ctx, purgeParts, s.ts(before), limit)
		if err != nil {
			return fmt.Errorf("purge sms parts: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}
