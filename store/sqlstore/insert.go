package sqlstore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/heraldhq/herald/messaging"
)

// batch is a slice of messages to insert, with their chat configurations
// encoded once.
type batch struct {
	msgs []*messaging.Message
	cfg  []string // JSON of each message's Config ("" when nil); nil when no message has one
}

func newBatch(msgs []*messaging.Message) (*batch, error) {
	b := &batch{msgs: msgs}
	for i, m := range msgs {
		if m.Config == nil {
			continue
		}
		if b.cfg == nil {
			b.cfg = make([]string, len(msgs))
		}
		j, err := json.Marshal(m.Config)
		if err != nil {
			return nil, fmt.Errorf("encode chat config of message %s: %w", m.ID, err)
		}
		b.cfg[i] = string(j)
	}
	return b, nil
}

// insertColumnList names the columns InsertMessages writes, in the
// schema's order: column c of message i is batch.value(c, i).
const insertColumnList = "id, company_id, campaign_id, fallback_for, due_at, created_at, updated_at, lease_until, " +
	"sent_at, delivered_at, seen_at, attempts, channel, status, phone, external_user_id, content, config, " +
	"fallback_content, details, sms_error_code, provider_message_id, expires_at"

// Indexes of the columns of insertColumnList.
const (
	colID = iota
	colCompanyID
	colCampaignID
	colFallbackFor
	colDueAt
	colCreatedAt
	colUpdatedAt
	colLeaseUntil
	colSentAt
	colDeliveredAt
	colSeenAt
	colAttempts // integer (int4)
	colChannel
	colStatus
	colPhone
	colExternalUserID
	colContent
	colConfig // JSON (jsonb)
	colFallbackContent
	colDetails
	colSMSErrorCode
	colProviderMessageID
	colExpiresAt
	numInsertColumns
)

// valueKind is the type of a column value.
type valueKind uint8

const (
	kindNull valueKind = iota
	kindID
	kindTime
	kindInt
	kindText
)

// value is one column value of one message, in a neutral form that each
// dialect encodes its own way.
type value struct {
	kind valueKind
	num  int64 // kindInt; kindTime: microseconds since the epoch
	id   messaging.ID
	text string
}

func (v value) equal(w value) bool {
	return v.kind == w.kind && v.num == w.num && v.id == w.id && v.text == w.text
}

func idValue(id messaging.ID) value { return value{kind: kindID, id: id} }

func nullIDValue(id messaging.ID) value {
	if id.IsZero() {
		return value{}
	}
	return idValue(id)
}

func timeValue(t time.Time) value { return value{kind: kindTime, num: t.UnixMicro()} }

func nullTimeValue(t time.Time) value {
	if t.IsZero() {
		return value{}
	}
	return timeValue(t)
}

func timePtrValue(t *time.Time) value {
	if t == nil {
		return value{}
	}
	return timeValue(*t)
}

func textValue(s string) value { return value{kind: kindText, text: s} }

func nullTextValue(s string) value {
	if s == "" {
		return value{}
	}
	return textValue(s)
}

// value returns column c of message i.
func (b *batch) value(c, i int) value {
	m := b.msgs[i]
	switch c {
	case colID:
		return idValue(m.ID)
	case colCompanyID:
		return idValue(m.CompanyID)
	case colCampaignID:
		return idValue(m.CampaignID)
	case colFallbackFor:
		return nullIDValue(m.FallbackFor)
	case colDueAt:
		return timeValue(m.DueAt)
	case colCreatedAt:
		return timeValue(m.CreatedAt)
	case colUpdatedAt:
		return timeValue(m.UpdatedAt)
	case colLeaseUntil:
		return nullTimeValue(m.LeaseUntil)
	case colSentAt:
		return timePtrValue(m.SentAt)
	case colDeliveredAt:
		return timePtrValue(m.DeliveredAt)
	case colSeenAt:
		return timePtrValue(m.SeenAt)
	case colAttempts:
		return value{kind: kindInt, num: int64(m.Attempts)}
	case colChannel:
		return textValue(string(m.Channel))
	case colStatus:
		return textValue(string(m.Status))
	case colPhone:
		return textValue(m.Phone)
	case colExternalUserID:
		return textValue(m.ExternalUserID)
	case colContent:
		return textValue(m.Content)
	case colConfig:
		if b.cfg == nil {
			return value{}
		}
		return nullTextValue(b.cfg[i])
	case colFallbackContent:
		return textValue(m.FallbackContent)
	case colDetails:
		return textValue(m.Details)
	case colSMSErrorCode:
		return textValue(m.SMSErrorCode)
	case colProviderMessageID:
		return nullTextValue(m.ProviderMessageID)
	case colExpiresAt:
		return timePtrValue(m.ExpiresAt)
	}
	panic(fmt.Sprintf("sqlstore: no insert column %d", c))
}

// constant reports whether column c has the same value for every message.
func (b *batch) constant(c int) bool {
	if c == colID && len(b.msgs) > 1 {
		return false
	}
	v := b.value(c, 0)
	for i := 1; i < len(b.msgs); i++ {
		if !v.equal(b.value(c, i)) {
			return false
		}
	}
	return true
}

// defaulted reports whether column c holds its schema default (NULL, the
// empty text, zero attempts) in every message, so that an insert may leave
// it out.
func (b *batch) defaulted(c int) bool {
	switch c {
	case colID, colCompanyID, colCampaignID, colDueAt, colCreatedAt, colUpdatedAt, colChannel, colStatus, colPhone:
		return false // NOT NULL without a default
	}
	v := b.value(c, 0)
	switch {
	case v.kind == kindNull:
	case v.kind == kindText && v.text == "" && c != colConfig && c != colProviderMessageID:
	case v.kind == kindInt && v.num == 0:
	default:
		return false
	}
	return b.constant(c)
}

// columns splits the columns of an insert of b: the ones to write, in
// insertColumnList's order, and their names. Columns left at their default
// in the whole batch are left out: the database fills them for less than
// it costs to send and decode them.
func (b *batch) columns() ([]int, string) {
	names := strings.Split(insertColumnList, ", ")
	var cols []int
	var list []string
	for c := range numInsertColumns {
		if !b.defaulted(c) {
			cols = append(cols, c)
			list = append(list, names[c])
		}
	}
	return cols, strings.Join(list, ", ")
}

// insertRows writes the rows of b in the transaction.
func (s *Store) insertRows(ctx context.Context, tx *txn, b *batch) error {
	var err error
	switch {
	case s.dialect == dialectSQLite:
		err = s.insertSQLite(ctx, tx.Tx.Tx, b)
	case len(b.msgs) < copyThreshold:
		err = s.insertValues(ctx, tx, b)
	default:
		err = copyMessages(ctx, tx, b)
	}
	if err != nil {
		return duplicate(err, "message")
	}
	return nil
}

// SQLite writes batches through one prepared multi-row INSERT per batch
// size. Columns whose value the whole batch shares are written as
// constants in the statement, so that only the varying ones are bound:
// most batches share their company, campaign, channel, status and times.
// OR ROLLBACK ends the transaction on a constraint failure, which spares
// SQLite the statement journal of each multi-row statement.

const (
	// sqliteMaxVars is SQLite's default limit on bound parameters.
	sqliteMaxVars = 32766
	// sqliteChunkRows is the most rows one INSERT statement writes.
	sqliteChunkRows = 1000
	// maxLiteralLen is the longest text written as a constant.
	maxLiteralLen = 64
)

func (s *Store) insertSQLite(ctx context.Context, tx *sql.Tx, b *batch) error {
	n := len(b.msgs)
	cols, list := b.columns()
	var row strings.Builder
	var vars []int
	row.WriteByte('(')
	for k, c := range cols {
		if k > 0 {
			row.WriteByte(',')
		}
		if lit, ok := sqliteLiteral(b.value(c, 0)); ok && b.constant(c) {
			row.WriteString(lit)
			continue
		}
		row.WriteByte('?')
		vars = append(vars, c)
	}
	row.WriteByte(')')
	chunk := min(n, sqliteChunkRows)
	if len(vars) > 0 {
		chunk = min(chunk, sqliteMaxVars/len(vars))
	}
	head := "INSERT OR ROLLBACK INTO messages (" + list + ") VALUES "
	prepare := func(rows int) (*sql.Stmt, error) {
		var q strings.Builder
		q.Grow(len(head) + rows*(row.Len()+1))
		q.WriteString(head)
		for i := range rows {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString(row.String())
		}
		st, err := tx.PrepareContext(ctx, q.String())
		if err != nil {
			return nil, fmt.Errorf("prepare insert: %w", err)
		}
		return st, nil
	}
	var st *sql.Stmt
	defer func() {
		if st != nil {
			_ = st.Close()
		}
	}()
	args := make([]any, 0, chunk*len(vars))
	for start := 0; start < n; start += chunk {
		end := min(n, start+chunk)
		if st == nil || end-start != chunk {
			if st != nil {
				_ = st.Close()
			}
			var err error
			if st, err = prepare(end - start); err != nil {
				return err
			}
		}
		args = args[:0]
		for i := start; i < end; i++ {
			m := b.msgs[i]
			for _, c := range vars {
				switch c {
				case colID:
					args = append(args, m.ID[:])
				case colCompanyID:
					args = append(args, m.CompanyID[:])
				case colCampaignID:
					args = append(args, m.CampaignID[:])
				default:
					args = append(args, sqliteArg(b.value(c, i)))
				}
			}
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("insert rows %d-%d: %w", start, end, err)
		}
	}
	return nil
}

// sqliteArg is the bound form of v.
func sqliteArg(v value) any {
	switch v.kind {
	case kindID:
		id := v.id
		return id[:]
	case kindTime, kindInt:
		return v.num
	case kindText:
		return v.text
	}
	return nil
}

// sqliteLiteral is the SQL constant of v, when v may be written as one.
func sqliteLiteral(v value) (string, bool) {
	switch v.kind {
	case kindNull:
		return "NULL", true
	case kindID:
		return "X'" + hex.EncodeToString(v.id[:]) + "'", true
	case kindTime, kindInt:
		return strconv.FormatInt(v.num, 10), true
	case kindText:
		if len(v.text) > maxLiteralLen || strings.IndexByte(v.text, 0) >= 0 || !utf8.ValidString(v.text) {
			return "", false
		}
		return "'" + strings.ReplaceAll(v.text, "'", "''") + "'", true
	}
	return "", false
}

// Postgres writes large batches with a binary COPY FROM STDIN, and small
// ones with one INSERT.

// copyThreshold is the smallest batch written with COPY.
const copyThreshold = 64

func (s *Store) insertValues(ctx context.Context, tx *txn, b *batch) error {
	cols, list := b.columns()
	var q strings.Builder
	q.WriteString("INSERT INTO messages (" + list + ") VALUES ")
	args := make([]any, 0, len(b.msgs)*len(cols))
	for i := range b.msgs {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteByte('(')
		for k, c := range cols {
			if k > 0 {
				q.WriteByte(',')
			}
			q.WriteByte('?')
			args = append(args, pgArg(b.value(c, i)))
		}
		q.WriteByte(')')
	}
	if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
		return fmt.Errorf("insert rows: %w", err)
	}
	return nil
}

// pgArg is the argument form of v for bun's Postgres formatter.
func pgArg(v value) any {
	switch v.kind {
	case kindID:
		return v.id.String()
	case kindTime:
		return time.UnixMicro(v.num).UTC()
	case kindInt:
		return v.num
	case kindText:
		return v.text
	}
	return nil
}

func copyMessages(ctx context.Context, tx *txn, b *batch) error {
	cols, list := b.columns()
	q := "COPY messages (" + list + ") FROM STDIN (FORMAT binary)"
	if _, err := pgdriver.CopyFrom(ctx, tx.conn, &copyReader{b: b, cols: cols}, q); err != nil {
		return fmt.Errorf("copy rows: %w", err)
	}
	return nil
}

// copyReader streams a batch in COPY's binary format, a few rows at a
// time: the server then decodes no text (uuid and timestamptz parsing is a
// large part of a text COPY).
type copyReader struct {
	b       *batch
	cols    []int // the columns written, in order
	started bool
	next    int    // next message to encode; -1 once the trailer is encoded
	buf     []byte // encoded, not yet read
	off     int
}

// copyRowsPerFill is how many rows copyReader encodes at once.
const copyRowsPerFill = 64

// pgEpochMicros is the Postgres epoch, 2000-01-01 UTC, in Unix
// microseconds: binary timestamps count from it.
const pgEpochMicros = 946_684_800_000_000

// copySignature opens a binary COPY stream.
const copySignature = "PGCOPY\n\xff\r\n\x00"

// Read implements io.Reader. It never returns data together with io.EOF:
// pgdriver drops what comes with it.
func (r *copyReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if r.off == len(r.buf) && !r.fill() {
			break
		}
		k := copy(p[n:], r.buf[r.off:])
		r.off += k
		n += k
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// fill encodes the next rows into buf, and reports false when everything
// was encoded and read.
func (r *copyReader) fill() bool {
	if r.next < 0 {
		return false
	}
	r.buf, r.off = r.buf[:0], 0
	if !r.started {
		r.started = true
		r.buf = append(r.buf, copySignature...)
		r.buf = binary.BigEndian.AppendUint32(r.buf, 0) // flags
		r.buf = binary.BigEndian.AppendUint32(r.buf, 0) // header extension length
	}
	if r.next == len(r.b.msgs) {
		r.next = -1
		r.buf = binary.BigEndian.AppendUint16(r.buf, 0xffff) // trailer: -1
		return true
	}
	end := min(len(r.b.msgs), r.next+copyRowsPerFill)
	for i := r.next; i < end; i++ {
		r.buf = binary.BigEndian.AppendUint16(r.buf, uint16(len(r.cols)))
		for _, c := range r.cols {
			r.buf = appendCopyValue(r.buf, c, r.b.value(c, i))
		}
	}
	r.next = end
	return true
}

// appendCopyValue appends column c's value v in COPY's binary format: its
// length, then its bytes.
func appendCopyValue(b []byte, c int, v value) []byte {
	switch v.kind {
	case kindNull:
		return binary.BigEndian.AppendUint32(b, 0xffffffff) // -1
	case kindID:
		b = binary.BigEndian.AppendUint32(b, 16)
		return append(b, v.id[:]...)
	case kindTime:
		b = binary.BigEndian.AppendUint32(b, 8)
		return binary.BigEndian.AppendUint64(b, uint64(v.num-pgEpochMicros))
	case kindInt:
		if c != colAttempts {
			panic(fmt.Sprintf("sqlstore: no binary form for integer column %d", c))
		}
		b = binary.BigEndian.AppendUint32(b, 4)
		return binary.BigEndian.AppendUint32(b, uint32(int32(v.num)))
	}
	if c == colConfig {
		b = binary.BigEndian.AppendUint32(b, uint32(len(v.text)+1))
		b = append(b, 1) // jsonb version
		return append(b, v.text...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(v.text)))
	return append(b, v.text...)
}
