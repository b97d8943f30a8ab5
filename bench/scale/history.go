package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The history's fast path: a DIAGNOSTIC SHORTCUT that gives a campaign
// Herald prepared (Ready, every message Pending) the delivered history it
// would have had, by set-based SQL run on the database by this program,
// because delivering millions of messages through the SMSC would take
// hours. Nothing measured goes through it: it only fills the database the
// measured requests then run against.
//
// It writes what Herald writes for a campaign delivered to its end, and
// keeps what Herald keeps: each transaction moves a chunk of the
// campaign's Pending messages to their final statuses and, in the same
// transaction, moves the campaign's counters and its company's pending
// count by exactly as much (herald check recounts them); the last one
// marks the campaign Completed.
//
// Outcomes follow the last two digits d of the number (uniform over the
// recipients):
//
//   - SMS: d 01, 02, 03 Failed (UNDELIVERED 001, EXPIRED 002, REJECTED 003,
//     as the SMSC's receipts give them), the rest Delivered; each message
//     gets the sms_parts row of its one part (the templates' texts fit in
//     one), named by a provider id "h" + hexadecimal, apart from the
//     simulator's ids, which have no letter h;
//   - chat: d 08, 09, 10 Failed at send time (USER_BLOCKED (8),
//     NOT_VIBER_USER (9), NO_SUITABLE_DEVICE (10); no fallback), d below 30
//     Delivered, the rest Seen; each sent message gets a message token and
//     every message a chat_seq from the database's counter; the Seen ones
//     with d of 45 or more answer the survey, option d mod 3.
//
// Sends are 10 µs apart from the moment the campaign's history is
// written on, receipts and delivered callbacks 1 s after the send, seen
// 5 s, answers 10 s.

// historyChunk is how many messages one fast-path transaction moves: on
// SQLite it holds the one write lock, which Herald's writer waits for.
const historyChunk = 20_000

// historyOwner is the claimed_by of the history's messages, as a process
// name is on the messages it sent.
const historyOwner = "scale-history"

// history writes delivered histories.
type history struct {
	d   *database
	seq int64 // provider ids, tokens and answer ids given so far
}

// written is what the fast path wrote for one campaign.
type written struct {
	delivered, seen, failed, answers int
	took                             time.Duration
}

// deliver gives campaign id, Ready with its n messages Pending, its
// delivered history, and completes it.
func (h *history) deliver(ctx context.Context, campaignID string, n int, chat bool) (written, error) {
	start := time.Now()
	id, err := h.d.id(campaignID)
	if err != nil {
		return written{}, err
	}
	var status string
	var pending, planned int
	err = h.d.db.QueryRowContext(ctx, h.d.q("SELECT status, pending, planned FROM campaigns WHERE id = ?"), id).Scan(&status, &pending, &planned)
	if err != nil {
		return written{}, fmt.Errorf("campaign %s: %w", campaignID, err)
	}
	if status != "Ready" || pending != n || planned != n {
		return written{}, fmt.Errorf("campaign %s is %s with %d of %d messages pending, want Ready with all %d", campaignID, status, pending, planned, n)
	}
	var w written
	t0 := time.Now()
	for moved := 0; ; {
		k, err := h.chunk(ctx, id, moved, t0, chat, &w)
		if err != nil {
			return written{}, fmt.Errorf("campaign %s: %w", campaignID, err)
		}
		if k == 0 {
			break
		}
		moved += k
	}
	if got := w.delivered + w.failed; got != n {
		return written{}, fmt.Errorf("campaign %s: the history moved %d messages, want %d", campaignID, got, n)
	}
	last := t0.Add(time.Duration(n) * historySpacing)
	res, err := h.d.db.ExecContext(ctx, h.d.q("UPDATE campaigns SET status = 'Completed', started_at = ?, completed_at = ?, updated_at = ? "+
		"WHERE id = ? AND status = 'Ready' AND pending = 0 AND sending = 0"), h.d.ts(t0), h.d.ts(last), h.d.ts(last), id)
	if err == nil {
		err = oneRow(res)
	}
	if err != nil {
		return written{}, fmt.Errorf("campaign %s: complete: %w", campaignID, err)
	}
	w.took = time.Since(start)
	return w, nil
}

// historySpacing is the time between two sends of the history.
const historySpacing = 10 * time.Microsecond

// chunk moves the next historyChunk Pending messages of the campaign (the
// first moved ones were moved before, sent from t0 on) in one
// transaction, adds them to w, and returns how many it moved.
func (h *history) chunk(ctx context.Context, id any, moved int, t0 time.Time, chat bool, w *written) (n int, err error) {
	tx, err := h.d.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	exec := func(what, query string, args ...any) (int64, error) {
		res, err := tx.ExecContext(ctx, h.d.q(query), args...)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
		return k, nil
	}
	d := h.d
	if d.pg {
		// The statements join the chunk to messages by id: through the
		// primary key, not by hashing a scan of the whole table, which
		// the planner prefers up to millions of rows.
		for _, set := range []string{"SET LOCAL enable_hashjoin = off", "SET LOCAL enable_mergejoin = off"} {
			if _, err := exec("plan the chunk", set); err != nil {
				return 0, err
			}
		}
	}
	// The chunk: the campaign's oldest Pending messages, through the claim
	// index, each with its digits d, its rank rn in the chunk, its unique
	// seq and its send time.
	if _, err := exec("chunk table", "CREATE TEMP TABLE scale_chunk (id "+d.idType()+" PRIMARY KEY, d integer NOT NULL, rn integer NOT NULL, "+
		"seq bigint NOT NULL, sent "+d.timeType()+" NOT NULL)"); err != nil {
		return 0, err
	}
	channel := "Smpp"
	if chat {
		channel = "Chat"
	}
	k, err := exec("choose the chunk", "INSERT INTO scale_chunk (id, d, rn, seq, sent) "+
		"SELECT s.id, s.d, s.rn, ? + s.rn, "+d.plus(d.timeParam(), "(? + s.rn) * ?")+" FROM ("+
		"SELECT p.id, p.d, ROW_NUMBER() OVER (ORDER BY p.due_at, p.id) AS rn FROM ("+
		"SELECT id, due_at, "+d.lastTwo("phone")+" AS d FROM messages "+
		"WHERE campaign_id = ? AND channel = '"+channel+"' AND status = 'Pending' ORDER BY due_at, id LIMIT ?) p) s",
		h.seq, d.ts(t0), moved, historySpacing.Microseconds(), id, historyChunk)
	if err != nil || k == 0 {
		if err == nil {
			err = tx.Rollback()
		}
		return 0, err
	}
	if d.pg {
		// Row counts for the planner: the updates look messages up by id.
		if _, err := exec("analyze the chunk", "ANALYZE scale_chunk"); err != nil {
			return 0, err
		}
	}
	var answers int64
	if chat {
		answers, err = h.chatChunk(exec, k)
	} else {
		err = h.smsChunk(exec)
	}
	if err != nil {
		return 0, err
	}
	var counts [3]int // Delivered, Seen, Failed
	rows, err := tx.QueryContext(ctx, "SELECT m.status, COUNT(*) FROM scale_chunk c JOIN messages m ON m.id = c.id GROUP BY m.status")
	if err != nil {
		return 0, fmt.Errorf("count the chunk: %w", err)
	}
	for rows.Next() {
		var st string
		var c int
		if err := rows.Scan(&st, &c); err != nil {
			rows.Close()
			return 0, fmt.Errorf("count the chunk: %w", err)
		}
		switch st {
		case "Delivered":
			counts[0] = c
		case "Seen":
			counts[1] = c
		case "Failed":
			counts[2] = c
		default:
			rows.Close()
			return 0, fmt.Errorf("count the chunk: %d messages %s", c, st)
		}
	}
	if err := rows.Close(); err != nil {
		return 0, fmt.Errorf("count the chunk: %w", err)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("count the chunk: %w", err)
	}
	if sum := counts[0] + counts[1] + counts[2]; sum != int(k) {
		return 0, fmt.Errorf("count the chunk: %d final of %d", sum, k)
	}
	// The counters count each message under its status only: a Seen
	// message is in seen, not in delivered.
	now := time.Now()
	c, err := exec("move the campaign's counters", "UPDATE campaigns SET pending = pending - ?, delivered = delivered + ?, seen = seen + ?, "+
		"failed = failed + ?, updated_at = ? WHERE id = ? AND status = 'Ready'", k, counts[0], counts[1], counts[2], d.ts(now), id)
	if err == nil && c != 1 {
		err = fmt.Errorf("move the campaign's counters: %d rows", c)
	}
	if err != nil {
		return 0, err
	}
	c, err = exec("move the company's pending count", "UPDATE companies SET pending_count = pending_count - ? "+
		"WHERE id = (SELECT company_id FROM campaigns WHERE id = ?)", k, id)
	if err == nil && c != 1 {
		err = fmt.Errorf("move the company's pending count: %d rows", c)
	}
	if err != nil {
		return 0, err
	}
	if _, err := exec("drop the chunk table", "DROP TABLE scale_chunk"); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	h.seq += k
	w.delivered += counts[0] + counts[1]
	w.seen += counts[1]
	w.failed += counts[2]
	w.answers += int(answers)
	return int(k), nil
}

// execFunc runs a statement of the chunk's transaction and returns the
// rows it changed.
type execFunc func(what, query string, args ...any) (int64, error)

// smsChunk writes the SMS of the chunk: their final statuses and their
// parts.
func (h *history) smsChunk(exec execFunc) error {
	d := h.d
	failed := "c.d BETWEEN 1 AND 3"
	_, err := exec("write the SMS", "UPDATE messages SET "+
		"status = CASE WHEN "+failed+" THEN 'Failed' ELSE 'Delivered' END, "+
		"details = CASE c.d WHEN 1 THEN 'UNDELIVERED' WHEN 2 THEN 'EXPIRED' WHEN 3 THEN 'REJECTED' ELSE '' END, "+
		"sms_error_code = CASE c.d WHEN 1 THEN '001' WHEN 2 THEN '002' WHEN 3 THEN '003' ELSE '' END, "+
		"provider_message_id = 'h' || "+d.hexOf("c.seq")+", attempts = 1, claimed_by = ?, "+
		"lease_until = "+d.plus("c.sent", "300000000")+", sent_at = c.sent, "+
		"delivered_at = CASE WHEN "+failed+" THEN NULL ELSE "+d.plus("c.sent", "1000000")+" END, "+
		"updated_at = "+d.plus("c.sent", "1000000")+" "+
		"FROM scale_chunk c WHERE messages.id = c.id", historyOwner)
	if err != nil {
		return err
	}
	_, err = exec("write the SMS parts", "INSERT INTO sms_parts (provider_id, message_id, part_index, part_count, created_at) "+
		"SELECT 'h' || "+d.hexOf("c.seq")+", c.id, 0, 1, c.sent FROM scale_chunk c")
	return err
}

// chatChunk writes the k chat messages of the chunk: their final
// statuses, their chat_seq (taken from the database's counter, which it
// advances), and the survey answers, whose number it returns.
func (h *history) chatChunk(exec execFunc, k int64) (int64, error) {
	d := h.d
	failed := "c.d BETWEEN 8 AND 10"
	seq := "nextval('chat_seq')"
	if !d.pg {
		seq = "(SELECT value FROM counters WHERE name = 'chat_seq') + c.rn"
	}
	_, err := exec("write the chat messages", "UPDATE messages SET "+
		"status = CASE WHEN "+failed+" THEN 'Failed' WHEN c.d < 30 THEN 'Delivered' ELSE 'Seen' END, "+
		"details = CASE c.d WHEN 8 THEN 'USER_BLOCKED (8)' WHEN 9 THEN 'NOT_VIBER_USER (9)' WHEN 10 THEN 'NO_SUITABLE_DEVICE (10)' ELSE '' END, "+
		"provider_message_id = CASE WHEN "+failed+" THEN NULL ELSE CAST(1000000000000000 + c.seq AS text) END, "+
		"chat_seq = "+seq+", attempts = 1, claimed_by = ?, lease_until = "+d.plus("c.sent", "300000000")+", "+
		"sent_at = CASE WHEN "+failed+" THEN NULL ELSE c.sent END, "+
		"delivered_at = CASE WHEN "+failed+" THEN NULL ELSE "+d.plus("c.sent", "1000000")+" END, "+
		"seen_at = CASE WHEN c.d >= 30 THEN "+d.plus("c.sent", "5000000")+" END, "+
		"updated_at = CASE WHEN "+failed+" THEN c.sent WHEN c.d < 30 THEN "+d.plus("c.sent", "1000000")+" ELSE "+d.plus("c.sent", "5000000")+" END "+
		"FROM scale_chunk c WHERE messages.id = c.id", historyOwner)
	if err != nil {
		return 0, err
	}
	if !d.pg {
		if _, err := exec("advance chat_seq", "UPDATE counters SET value = value + ? WHERE name = 'chat_seq'", k); err != nil {
			return 0, err
		}
	}
	opts := surveyOptions()
	if len(opts) != 3 {
		return 0, errors.New("the survey's answers assume three options")
	}
	return exec("write the survey answers", "INSERT INTO survey_results (id, company_id, campaign_id, message_id, phone, external_user_id, "+
		"option_index, option_text, tracking_data, responded_at) "+
		"SELECT "+d.uuidOf("?", "c.seq")+", m.company_id, m.campaign_id, m.id, m.phone, m.external_user_id, c.d % 3, "+
		"CASE c.d % 3 WHEN 0 THEN ? WHEN 1 THEN ? ELSE ? END, "+d.idText("m.id")+", "+d.plus("c.sent", "10000000")+" "+
		"FROM scale_chunk c JOIN messages m ON m.id = c.id WHERE c.d >= 45",
		time.Now().UnixMilli(), opts[0], opts[1], opts[2])
}

// oneRow fails unless res changed exactly one row.
func oneRow(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("%d rows changed, want 1", n)
	}
	return nil
}
