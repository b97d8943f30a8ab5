package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/messaging"
)

// The delivery path writes batches of rows thousands of times a second.
// Written as multi-row VALUES lists or long IN lists, each batch is a
// statement text of its own that the database parses and plans again (for
// SQLite, compiling a VALUES list costs about as much as running it). So
// those statements take their rows as one JSON array of arrays instead, a
// single string the statement expands with json_each (SQLite) or
// jsonb_array_elements (Postgres): the statement's text stays short and the
// same whatever the batch.

// jsonRows builds the JSON array of a batch's rows, values in the forms
// the dialect's expressions (jsonCol) read back.
type jsonRows struct {
	s    *Store
	b    []byte
	rows int
	cols int
}

// newJSONRows returns an empty batch for about n rows.
func (s *Store) newJSONRows(n int) *jsonRows {
	return &jsonRows{s: s, b: append(make([]byte, 0, 64+n*96), '[')}
}

// row starts a row.
func (j *jsonRows) row() *jsonRows {
	if j.rows > 0 {
		j.b = append(j.b, ']', ',')
	}
	j.b = append(j.b, '[')
	j.rows++
	j.cols = 0
	return j
}

func (j *jsonRows) sep() {
	if j.cols > 0 {
		j.b = append(j.b, ',')
	}
	j.cols++
}

// id adds an identifier: hex on SQLite (unhex reads it back), the
// canonical text on Postgres.
func (j *jsonRows) id(id messaging.ID) *jsonRows {
	j.sep()
	j.b = append(j.b, '"')
	if j.s.dialect == dialectSQLite {
		j.b = hex.AppendEncode(j.b, id[:])
	} else {
		j.b = append(j.b, id.String()...)
	}
	j.b = append(j.b, '"')
	return j
}

// ts adds a time: microseconds on SQLite, RFC 3339 text on Postgres.
func (j *jsonRows) ts(t time.Time) *jsonRows {
	j.sep()
	if j.s.dialect == dialectSQLite {
		j.b = strconv.AppendInt(j.b, t.UnixMicro(), 10)
		return j
	}
	j.b = append(j.b, '"')
	j.b = t.UTC().AppendFormat(j.b, time.RFC3339Nano)
	j.b = append(j.b, '"')
	return j
}

// tsPtr adds *t, or null.
func (j *jsonRows) tsPtr(t *time.Time) *jsonRows {
	if t == nil {
		j.sep()
		j.b = append(j.b, "null"...)
		return j
	}
	return j.ts(*t)
}

// int adds a number.
func (j *jsonRows) int(v int64) *jsonRows {
	j.sep()
	j.b = strconv.AppendInt(j.b, v, 10)
	return j
}

// text adds a string.
func (j *jsonRows) text(s string) *jsonRows {
	j.sep()
	j.b = appendJSONString(j.b, s)
	return j
}

// null adds a null.
func (j *jsonRows) null() *jsonRows {
	j.sep()
	j.b = append(j.b, "null"...)
	return j
}

// nullText adds s, or null when s is empty.
func (j *jsonRows) nullText(s string) *jsonRows {
	if s == "" {
		j.sep()
		j.b = append(j.b, "null"...)
		return j
	}
	return j.text(s)
}

// String returns the JSON text.
func (j *jsonRows) String() string {
	if j.rows > 0 {
		return string(j.b) + "]]"
	}
	return string(j.b) + "]"
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
			i++
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
		}
	}
	return append(b, '"')
}

// Column kinds of jsonCol.
const (
	jsonID = iota
	jsonText
	jsonInt
	jsonTime
	jsonBool // written as 0 or 1
)

// jsonFrom is the FROM item that expands a JSON batch argument into rows
// named j, one array per row in j.value. On SQLite the rows are
// materialised first (LIMIT -1 keeps the subquery from being flattened),
// each as JSONB (jsonb_each): the batch's text is parsed once, and each
// ->> of a row reads its binary form. With json_each every row was text
// again, parsed again for its columns; a batch of callback keys spent a
// fifth of its insert there. On Postgres the batch is read as jsonb,
// parsed once: as json, each ->> of a row parsed the row's text again.
func (s *Store) jsonFrom() string {
	if s.dialect == dialectSQLite {
		return "(SELECT value FROM jsonb_each(?) LIMIT -1) AS j"
	}
	return "jsonb_array_elements(?::jsonb) AS j(value)"
}

// jsonCol is the expression reading column i of a JSON batch row as kind.
func (s *Store) jsonCol(i, kind int) string {
	e := "j.value ->> " + strconv.Itoa(i)
	if s.dialect == dialectSQLite {
		if kind == jsonID {
			return "unhex(" + e + ")"
		}
		return e
	}
	switch kind {
	case jsonID:
		return "(" + e + ")::uuid"
	case jsonInt:
		return "(" + e + ")::bigint"
	case jsonTime:
		return "(" + e + ")::timestamptz"
	case jsonBool:
		return "(" + e + ")::int <> 0"
	}
	return e
}

// jsonSelect returns "SELECT <cols> FROM <json rows>" naming the columns of
// a JSON batch.
func (s *Store) jsonSelect(names []string, kinds []int) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.jsonCol(i, kinds[i]))
		b.WriteString(" AS ")
		b.WriteString(n)
	}
	b.WriteString(" FROM ")
	b.WriteString(s.jsonFrom())
	return b.String()
}

// jsonIDs returns the JSON array of ids, for a condition written with
// jsonIDsIn.
func (s *Store) jsonIDs(ids []messaging.ID) string {
	j := s.newJSONRows(len(ids))
	for i, id := range ids {
		if i > 0 {
			j.b = append(j.b, ',')
		}
		j.cols = 0
		j.id(id)
	}
	return string(j.b) + "]"
}

// jsonIDsIn is the condition that col is one of the ids of a jsonIDs
// argument.
func (s *Store) jsonIDsIn(col string) string {
	if s.dialect == dialectSQLite {
		return col + " IN (SELECT unhex(value) FROM json_each(?))"
	}
	return pgAnyOf(col, "SELECT value::uuid FROM json_array_elements_text(?::json)")
}

// pgAnyOf is the Postgres condition that col is one of the rows of
// subquery, written "col = ANY(ARRAY(subquery))": its plan looks each
// value up in col's index whatever the table's size. With "col IN
// (subquery)" the generic plan of a prepared statement, made once while
// the table was small, could join by hash against a scan of the whole
// table, and kept doing so as the table grew.
func pgAnyOf(col, subquery string) string {
	return col + " = ANY(ARRAY(" + subquery + "))"
}

// jsonStrings returns the JSON array of strings, for a condition written
// with jsonTextsIn.
func jsonStrings(ss []string) string {
	b := []byte{'['}
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return string(append(b, ']'))
}

// jsonTextsIn is the condition that col is one of the strings of a
// jsonStrings argument.
func (s *Store) jsonTextsIn(col string) string {
	if s.dialect == dialectSQLite {
		return col + " IN (SELECT value FROM json_each(?))"
	}
	return pgAnyOf(col, "SELECT value FROM json_array_elements_text(?::json)")
}

// rawQuery runs q in tx through the driver, its ? placeholders bound by
// the driver ($1, $2, ... on Postgres) rather than formatted into the text
// by bun: a JSON batch is then neither copied into the statement nor
// parsed as part of it. A statement prepared by prepareQueries runs
// prepared.
func (s *Store) rawQuery(ctx context.Context, tx *txn, q string, args ...any) (*sql.Rows, error) {
	if st := s.stmts.get(q); st != nil {
		return tx.Tx.Tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return tx.Tx.Tx.QueryContext(ctx, s.placeholders(q), args...)
}

// rawExec is rawQuery for statements that return no rows.
func (s *Store) rawExec(ctx context.Context, tx *txn, q string, args ...any) (sql.Result, error) {
	if st := s.stmts.get(q); st != nil {
		return tx.Tx.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.Tx.Tx.ExecContext(ctx, s.placeholders(q), args...)
}

// placeholders numbers the ? placeholders of q on Postgres. The
// statements given to it hold no ? anywhere else.
func (s *Store) placeholders(q string) string {
	if s.dialect != dialectPostgres || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// deliveryQueries are the statements of the delivery path: their texts do
// not depend on the batch (it is a JSON argument), so each is prepared
// once per connection and kept.
type deliveryQueries struct {
	lockMessages, claimSQLite, claimSQLiteOne string
	// lockDescribed is lockMessages with what a message.status event's
	// data needs besides (see describedState).
	lockDescribed string
	// claimPostgres and claimPostgresQuotas are the Postgres claims of
	// SMS (index 0) and of chat messages (index 1); see pgClaims.
	claimPostgres, claimPostgresQuotas     [2]string
	recordParts, readParts, receiptsUpdate string
	partReceipts, partsInsert              string
	// subscribers reads the enabled webhook endpoints of companies.
	subscribers string
	// writeStates writes status, updated_at and the given columns of
	// messages, one statement per set of columns.
	writeStates [setAll + 1]string
}

// stmtCache holds prepared statements of the writer pool by their text.
// A statement is prepared outside any transaction (on SQLite the one
// writer connection may be in use by the caller's own transaction) and
// then used inside transactions, which prepare it on their connection the
// first time and reuse it after.
//
// On SQLite the writer's other statements of constant text (a claim's
// read of the campaigns in progress, a campaign's counters, whose SET
// list depends on the statuses that moved) are prepared too, after the
// transaction that first ran them unprepared: get notes the text, and the
// next prepareQueries, outside any transaction, prepares it. Up to
// maxPrepared statements are kept.
type stmtCache struct {
	once     sync.Once
	q        deliveryQueries
	admit    admitQueries
	ready    atomic.Bool
	mu       sync.Mutex
	prepared map[string]*sql.Stmt
	// lazy is set on SQLite: texts not prepared are noted in missed.
	lazy      bool
	missed    map[string]struct{}
	anyMissed atomic.Bool
}

// maxPrepared bounds the statements a stmtCache prepares.
const maxPrepared = 256

func (c *stmtCache) get(q string) *sql.Stmt {
	if !c.ready.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.prepared[q]
	if st == nil && c.lazy && len(c.prepared)+len(c.missed) < maxPrepared {
		if c.missed == nil {
			c.missed = map[string]struct{}{}
		}
		c.missed[q] = struct{}{}
		c.anyMissed.Store(true)
	}
	return st
}

// queries returns the delivery statements of the store's dialect.
func (s *Store) queries() *deliveryQueries {
	c := &s.stmts
	c.once.Do(func() {
		lock := ""
		if s.dialect == dialectPostgres {
			lock = " FOR UPDATE"
		}
		within := s.pgWithin("id")
		c.q = deliveryQueries{
			lockMessages: "SELECT id, company_id, campaign_id, fallback_for IS NOT NULL, status, sent_at, channel, unconfirmed FROM messages WHERE " +
				s.jsonIDsIn("id") + within + " ORDER BY id" + lock,
			lockDescribed: "SELECT id, company_id, campaign_id, fallback_for IS NOT NULL, status, sent_at, channel, unconfirmed, " +
				"phone, external_user_id, fallback_for, created_at, delivered_at, seen_at, details, sms_error_code FROM messages WHERE " +
				s.jsonIDsIn("id") + within + " ORDER BY id" + lock,
			claimSQLite: sqliteClaim + "WHERE " + s.jsonIDsIn("id") + " AND status = 'Pending' RETURNING " + messageColumns(""),
			claimSQLiteOne: sqliteClaim + "WHERE id IN (SELECT id FROM messages WHERE campaign_id = ? AND channel = ? AND status = 'Pending' " +
				"AND due_at <= ? ORDER BY due_at, id LIMIT ?) RETURNING " + messageColumns(""),
			// Rows of parts recorded Sent (with a message) and rows of
			// receipts of parts not known (without one), in one statement
			// (see recordParts). A part's row without a message holds an
			// early receipt, kept; a part's row of another message is a part
			// id the SMSC gave again: it now names this part, without the
			// old receipt. A receipt's row is written unless the row holds
			// a receipt already.
			recordParts: "INSERT INTO sms_parts (provider_id, message_id, part_index, part_count, state, err, done_at, created_at) " +
				s.jsonSelect([]string{"provider_id", "message_id", "part_index", "part_count", "state", "err", "done_at", "created_at"},
					[]int{jsonText, jsonID, jsonInt, jsonInt, jsonText, jsonText, jsonTime, jsonTime}) +
				" WHERE true ON CONFLICT (provider_id) DO UPDATE SET " +
				"message_id = coalesce(excluded.message_id, sms_parts.message_id), " +
				"part_index = CASE WHEN excluded.message_id IS NULL THEN sms_parts.part_index ELSE excluded.part_index END, " +
				"part_count = CASE WHEN excluded.message_id IS NULL THEN sms_parts.part_count ELSE excluded.part_count END, " +
				"created_at = CASE WHEN excluded.message_id IS NULL THEN sms_parts.created_at ELSE excluded.created_at END, " +
				"state = CASE WHEN excluded.message_id IS NULL THEN excluded.state WHEN sms_parts.message_id IS NULL THEN sms_parts.state END, " +
				"err = CASE WHEN excluded.message_id IS NULL THEN excluded.err WHEN sms_parts.message_id IS NULL THEN sms_parts.err ELSE '' END, " +
				"done_at = CASE WHEN excluded.message_id IS NULL THEN excluded.done_at WHEN sms_parts.message_id IS NULL THEN sms_parts.done_at END " +
				"WHERE excluded.message_id IS NOT NULL OR sms_parts.state IS NULL" + partReturning,
			partsInsert: "INSERT INTO sms_parts (provider_id, message_id, part_index, part_count, state, err, done_at, created_at) " +
				s.jsonSelect([]string{"provider_id", "message_id", "part_index", "part_count", "state", "err", "done_at", "created_at"},
					[]int{jsonText, jsonID, jsonInt, jsonInt, jsonText, jsonText, jsonTime, jsonTime}) + " WHERE true ON CONFLICT (provider_id) DO NOTHING",
			readParts: "SELECT provider_id, message_id, part_count, state, err, done_at FROM sms_parts WHERE " +
				s.jsonTextsIn("provider_id"),
			receiptsUpdate: "WITH v AS (" + s.jsonSelect([]string{"provider_id", "state", "err", "done_at", "created_at"},
				[]int{jsonText, jsonText, jsonText, jsonTime, jsonTime}) +
				") UPDATE sms_parts SET state = v.state, err = v.err, done_at = v.done_at" +
				" FROM v WHERE sms_parts.provider_id = v.provider_id AND sms_parts.state IS NULL" +
				s.pgAlsoIn("sms_parts.provider_id", "SELECT provider_id FROM v") + partReturning,
			partReceipts: "SELECT provider_id, message_id, part_count, state, err, done_at FROM sms_parts " +
				"WHERE " + s.jsonIDsIn("message_id") + " AND part_count > 1 AND state IS NOT NULL",
		}
		for i, ch := range []messaging.Channel{messaging.ChannelSMS, messaging.ChannelChat} {
			c.q.claimPostgres[i], c.q.claimPostgresQuotas[i] = pgClaims(ch)
		}
		c.q.subscribers = "SELECT id, company_id, events, batch_max_events FROM webhook_endpoints WHERE disabled_at IS NULL AND " + s.jsonIDsIn("company_id")
		for cols := range c.q.writeStates {
			c.q.writeStates[cols] = s.writeStatesQuery(stateColumns(cols))
		}
		c.admit = s.newAdmitQueries()
	})
	return &c.q
}

// pgClaims returns the Postgres claims of the messages of a channel,
// without quotas and with. The channel is part of the text, not an
// argument: a plan made once for every run (a generic plan) may then read
// the channel's partial claim index, whose condition names the channel.
// With the channel as an argument the planner cannot tell that the index
// covers the rows asked for, and a generic plan reads every Pending
// message of the campaign instead.
func pgClaims(channel messaging.Channel) (plain, quotas string) {
	ch := "'" + strings.ReplaceAll(string(channel), "'", "''") + "'"
	plain = "WITH " + pgFloors + ", picked AS (" +
		"SELECT m.id FROM campaigns c LEFT JOIN f ON f.campaign = c.id CROSS JOIN LATERAL (" +
		"SELECT id, due_at FROM messages WHERE campaign_id = c.id AND channel = " + ch + " AND status = 'Pending' AND due_at <= ? " +
		pgAboveFloor + "ORDER BY due_at, id LIMIT ? FOR UPDATE SKIP LOCKED) m " +
		"WHERE ((c.status = 'InProgress' AND c.pending + c.fb_pending > 0) OR (c.status = 'Completed' AND c.fb_pending > 0)) " +
		"ORDER BY (c.mode = 'Bulk' AND NOT c.hidden), m.due_at, m.id LIMIT ?) " +
		pgClaimUpdate()
	// The same with quotas: a capped company's campaigns give at most its
	// quota each, and its messages are numbered to keep the first of them
	// up to the quota. A campaign's own quota (cq) bounds what its lateral
	// reads.
	quotas = "WITH " + pgFloors + ", q AS (SELECT * FROM json_to_recordset(?::json) AS q(company uuid, quota int)), " +
		"cq AS (SELECT * FROM json_to_recordset(?::json) AS cq(campaign uuid, quota int)), " +
		"cand AS (SELECT m.id, m.due_at, (c.mode = 'Bulk' AND NOT c.hidden) AS bulk, q.quota, " +
		"row_number() OVER (PARTITION BY c.company_id ORDER BY (c.mode = 'Bulk' AND NOT c.hidden), m.due_at, m.id) AS n " +
		"FROM campaigns c LEFT JOIN q ON q.company = c.company_id LEFT JOIN cq ON cq.campaign = c.id LEFT JOIN f ON f.campaign = c.id " +
		"CROSS JOIN LATERAL (" +
		"SELECT id, due_at FROM messages WHERE campaign_id = c.id AND channel = " + ch + " AND status = 'Pending' AND due_at <= ? " +
		pgAboveFloor + "ORDER BY due_at, id LIMIT least(?, coalesce(q.quota, ?), coalesce(cq.quota, ?)) FOR UPDATE SKIP LOCKED) m " +
		"WHERE ((c.status = 'InProgress' AND c.pending + c.fb_pending > 0) OR (c.status = 'Completed' AND c.fb_pending > 0)) " +
		"AND (q.quota IS NULL OR q.quota > 0) AND (cq.quota IS NULL OR cq.quota > 0)), " +
		"picked AS (SELECT id FROM cand WHERE quota IS NULL OR n <= quota ORDER BY bulk, due_at, id LIMIT ?) " +
		pgClaimUpdate()
	return plain, quotas
}

// pgFloors is the claims' first CTE: the claim floors of the campaigns
// (claimFloors), a JSON array, their first argument.
const pgFloors = "f AS (SELECT * FROM json_to_recordset(?::json) AS f(campaign uuid, due timestamptz, id uuid))"

// pgAboveFloor bounds a campaign's messages in a claim by its floor, where
// it has one: the scan of the claim index starts past the entries the
// campaign's claims left behind.
const pgAboveFloor = "AND (due_at, id) > (coalesce(f.due, '-infinity'), coalesce(f.id, '00000000-0000-0000-0000-000000000000')) "

// pgClaimUpdate claims the messages of a "picked" subquery on Postgres.
func pgClaimUpdate() string {
	return "UPDATE messages SET status = 'Sending', attempts = messages.attempts + 1, lease_until = ?, claimed_by = ?, updated_at = ? " +
		"FROM picked WHERE messages.id = picked.id RETURNING " + messageColumns("messages")
}

// sqliteClaim begins the SQLite claim statements: the claimed messages
// go Sending, leased to their owner.
const sqliteClaim = "UPDATE messages SET status = 'Sending', attempts = attempts + 1, lease_until = ?, claimed_by = ?, updated_at = ? "

// writeStatesQuery is the statement writing status, updated_at and the
// columns cols of the messages of a JSON batch, whose rows hold id,
// status, updated_at and then the columns of cols in bit order.
func (s *Store) writeStatesQuery(cols stateColumns) string {
	names := []string{"id", "status", "updated_at"}
	kinds := []int{jsonID, jsonText, jsonTime}
	set := "status = v.status, updated_at = v.updated_at"
	for _, c := range cols.list() {
		name := stateColumnNames[bits.TrailingZeros16(uint16(c))]
		kind := jsonText
		if c <= setDueAt {
			kind = jsonTime
		}
		names, kinds = append(names, name), append(kinds, kind)
		set += ", " + name + " = v." + name
	}
	return "WITH v AS (" + s.jsonSelect(names, kinds) + ") UPDATE messages SET " + set +
		" FROM v WHERE messages.id = v.id" + s.pgAlsoIn("messages.id", "SELECT id FROM v") + s.pgWithin("messages.id")
}

// pgWithin is, on Postgres, the condition " AND col BETWEEN ? AND ?" on
// the lowest and highest id of a batch (idBounds): the planner then reads
// only the partitions of messages those ids fall in, where the batch's
// ids alone, inside a subquery, would have it plan and probe every
// partition. Empty on SQLite, whose messages are one table.
func (s *Store) pgWithin(col string) string {
	if s.dialect == dialectSQLite {
		return ""
	}
	return " AND " + col + " BETWEEN ?::uuid AND ?::uuid"
}

// idBounds returns the arguments of pgWithin for a batch of ids: its
// lowest and highest id on Postgres, none on SQLite.
func (s *Store) idBounds(ids []messaging.ID) []any {
	if s.dialect == dialectSQLite || len(ids) == 0 {
		return nil
	}
	lo, hi := ids[0], ids[0]
	for _, id := range ids[1:] {
		if bytes.Compare(id[:], lo[:]) < 0 {
			lo = id
		}
		if bytes.Compare(id[:], hi[:]) > 0 {
			hi = id
		}
	}
	return []any{lo.String(), hi.String()}
}

// commonStateColumns are the sets of columns of the usual updates, whose
// statements are prepared ahead: Sent (an SMS; a chat message with its
// token), Delivered, Seen (after Delivered, or straight from Sent),
// Failed, and a retry back to Pending.
var commonStateColumns = []stateColumns{
	setSentAt, setSentAt | setProviderMessageID, setSentAt | setProviderMessageID | setRoute, setDeliveredAt, setSeenAt, setDeliveredAt | setSeenAt,
	setSentAt | setDeliveredAt, setDetails, setDetails | setSMSErrorCode, setDueAt | setDetails,
}

// pgAlsoIn is, on Postgres, the extra condition " AND col = ANY(ARRAY(
// subquery))" of an UPDATE joined to its batch, which makes its plan look
// the rows up by index (see pgAnyOf); empty on SQLite.
func (s *Store) pgAlsoIn(col, subquery string) string {
	if s.dialect == dialectSQLite {
		return ""
	}
	return " AND " + pgAnyOf(col, subquery)
}

// partReturning returns a part row as scanPartRow reads it.
const partReturning = " RETURNING sms_parts.provider_id, sms_parts.message_id, sms_parts.part_count, sms_parts.state, sms_parts.err, sms_parts.done_at"

// preparedTexts lists the statements prepareQueries prepares.
func (s *Store) preparedTexts() []string {
	q := s.queries()
	texts := []string{q.lockMessages, q.lockDescribed, q.recordParts, q.readParts, q.receiptsUpdate, q.partReceipts, q.subscribers}
	for _, cols := range commonStateColumns {
		texts = append(texts, q.writeStates[cols])
	}
	texts = append(texts, s.stmts.admit.texts()...)
	if s.dialect == dialectSQLite {
		return append(texts, q.claimSQLite, q.claimSQLiteOne, q.partsInsert, sqliteClaimCampaigns)
	}
	texts = append(texts, q.claimPostgres[:]...)
	return append(texts, q.claimPostgresQuotas[:]...)
}

// prepareQueries prepares the delivery statements once. It runs outside
// transactions; when it fails the statements run unprepared and the next
// call tries again.
func (s *Store) prepareQueries(ctx context.Context) {
	c := &s.stmts
	if c.ready.Load() {
		if c.anyMissed.Load() {
			s.prepareMissed(ctx)
		}
		return
	}
	texts := s.preparedTexts()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready.Load() {
		return
	}
	prepared := make(map[string]*sql.Stmt, len(texts))
	for _, t := range texts {
		st, err := s.db.DB.PrepareContext(ctx, s.placeholders(t))
		if err != nil {
			for _, st := range prepared {
				_ = st.Close()
			}
			return
		}
		prepared[t] = st
	}
	c.prepared = prepared
	c.lazy = s.dialect == dialectSQLite
	c.ready.Store(true)
}

// prepareMissed prepares the statements get noted, outside any
// transaction, without holding the cache's lock: a transaction on the
// one SQLite connection may need it meanwhile. A text that fails to
// prepare is not tried again.
func (s *Store) prepareMissed(ctx context.Context) {
	c := &s.stmts
	c.mu.Lock()
	texts := make([]string, 0, len(c.missed))
	for t := range c.missed {
		texts = append(texts, t)
	}
	clear(c.missed)
	c.anyMissed.Store(false)
	c.mu.Unlock()
	for _, t := range texts {
		st, err := s.db.DB.PrepareContext(ctx, s.placeholders(t))
		if err != nil {
			continue
		}
		c.mu.Lock()
		if _, ok := c.prepared[t]; ok || !c.ready.Load() {
			_ = st.Close()
		} else {
			c.prepared[t] = st
		}
		c.mu.Unlock()
	}
}

// closeStmts closes the prepared statements.
func (s *Store) closeStmts() {
	c := &s.stmts
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ready.Store(false)
	for _, st := range c.prepared {
		_ = st.Close()
	}
	c.prepared = nil
	clear(c.missed)
}
