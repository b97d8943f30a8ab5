package infobip

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// maxReportBytes caps a report body: Infobip batches up to 100 reports
// by default.
const maxReportBytes = 1 << 20

// ServeHTTP takes one request of Infobip's reports for the service:
//
//   - 405 to any method but POST; 413 past 1 MiB;
//   - 401 when the Basic credentials differ from the service's
//     callbackUsername and callbackPassword (compared in constant time),
//     before the body is parsed;
//   - 400 when the body is not a results array of reports Herald reads
//     (a report of a message Herald did not send is acknowledged and
//     dropped);
//   - 401 when every report of it was taken before (a replay);
//   - the new delivery and seen reports to one Reporter.ChatStatuses
//     call, the new inbound messages to Reporter.ChatInbound; 500 when one
//     failed (Infobip's next post of its reports is then taken, see
//     forget), else 200.
func (a *Adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "only POST is served")
		return
	}
	if !a.authorized(r) {
		a.log.WarnContext(r.Context(), "infobip report refused: wrong credentials", "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Basic realm="herald"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong Basic credentials")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReportBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "the report is too large")
			return
		}
		writeError(w, http.StatusBadRequest, "the report could not be read")
		return
	}
	batch, err := a.parse(r.Context(), body)
	if err != nil {
		a.log.WarnContext(r.Context(), "infobip report refused", "err", err)
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx := r.Context()
	fresh, err := a.fresh(ctx, batch)
	if err != nil {
		a.log.ErrorContext(ctx, "infobip report: replay guard failed", "err", err)
		writeError(w, http.StatusInternalServerError, "the report could not be checked; send it again")
		return
	}
	if len(fresh.keys) == 0 && len(batch.keys) > 0 {
		a.log.WarnContext(ctx, "infobip report refused: replay", "reports", len(batch.keys))
		writeError(w, http.StatusUnauthorized, "every report of this request was taken before")
		return
	}
	if err := a.report(ctx, fresh); err != nil {
		a.forget(ctx, fresh.keys)
		a.log.ErrorContext(ctx, "infobip report not stored", "err", err)
		writeError(w, http.StatusInternalServerError, "the report was not stored; send it again")
		return
	}
	w.WriteHeader(http.StatusOK)
}

// authorized checks the request's Basic credentials in constant time.
func (a *Adapter) authorized(r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	// Equal lengths for ConstantTimeCompare: compare digests.
	u1, u2 := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(a.creds.CallbackUsername))
	p1, p2 := sha256.Sum256([]byte(pass)), sha256.Sum256([]byte(a.creds.CallbackPassword))
	return subtle.ConstantTimeCompare(u1[:], u2[:])&subtle.ConstantTimeCompare(p1[:], p2[:]) == 1
}

// batch is what one request reports, each item with its replay key.
type batch struct {
	statuses    []delivery.ChatStatus
	statusKeys  []string
	inbound     []delivery.ChatInbound
	inboundKeys []string
	pendingKeys []string // reports acknowledged and not reported
	keys        []string // every key
}

// parse reads a report body. Reports of the PENDING group say nothing
// Herald records; they are acknowledged and dropped. ctx is the report's
// request.
func (a *Adapter) parse(ctx context.Context, body []byte) (batch, error) {
	var b batch
	var rs reports
	d := json.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(&rs); err != nil {
		return b, fmt.Errorf("the body is not a JSON report: %w", err)
	}
	if rs.Results == nil {
		return b, errors.New("the report has no results array")
	}
	prefix := fmt.Sprintf("infobip:%d:", a.s.ServiceID)
	for i, it := range rs.Results {
		switch {
		case it.Message != nil:
			in, err := a.inboundOf(it)
			if err != nil {
				return b, fmt.Errorf("results[%d]: %w", i, err)
			}
			key := prefix + "mo:" + it.MessageID
			b.keys = append(b.keys, key)
			b.inbound = append(b.inbound, in)
			b.inboundKeys = append(b.inboundKeys, key)
		case it.Status != nil:
			st, keep, err := a.statusOf(it)
			if isNotHerald(err) {
				a.log.WarnContext(ctx, "infobip report of a message Herald did not send, acknowledged", "message", it.MessageID)
				continue
			}
			if err != nil {
				return b, fmt.Errorf("results[%d]: %w", i, err)
			}
			key := fmt.Sprintf("%sdlr:%s:%d:%d", prefix, it.MessageID, it.Status.group(), it.Status.ID)
			b.keys = append(b.keys, key)
			if keep {
				b.statuses = append(b.statuses, st)
				b.statusKeys = append(b.statusKeys, key)
			} else {
				b.pendingKeys = append(b.pendingKeys, key)
			}
		case it.SeenAt != "":
			st, err := a.seenOf(it)
			if isNotHerald(err) {
				a.log.WarnContext(ctx, "infobip seen report of a message Herald did not send, acknowledged", "message", it.MessageID)
				continue
			}
			if err != nil {
				return b, fmt.Errorf("results[%d]: %w", i, err)
			}
			key := prefix + "seen:" + it.MessageID
			b.keys = append(b.keys, key)
			b.statuses = append(b.statuses, st)
			b.statusKeys = append(b.statusKeys, key)
		default:
			return b, fmt.Errorf("results[%d] is neither a delivery report, a seen report nor an inbound message", i)
		}
	}
	return b, nil
}

// messageIDOf is Herald's id of a report's message: its callbackData,
// else its messageId (both set to Herald's id when sending).
func messageIDOf(it report) (messaging.ID, error) {
	for _, s := range []string{it.CallbackData, it.MessageID} {
		if id, err := messaging.ParseID(strings.TrimSpace(s)); err == nil {
			return id, nil
		}
	}
	if it.MessageID == "" {
		return messaging.ID{}, errors.New("messageId is missing")
	}
	return messaging.ID{}, notHeraldError{id: it.MessageID}
}

// notHeraldError is a report of a message Herald did not send (another
// system sending through the same Infobip account): it is acknowledged
// and dropped, so that it does not hold back the reports around it.
type notHeraldError struct{ id string }

func (e notHeraldError) Error() string { return fmt.Sprintf("message %q is not one Herald sent", e.id) }

func isNotHerald(err error) bool {
	var nh notHeraldError
	return errors.As(err, &nh)
}

func (a *Adapter) statusOf(it report) (delivery.ChatStatus, bool, error) {
	id, err := messageIDOf(it)
	if err != nil {
		return delivery.ChatStatus{}, false, err
	}
	at, err := parseTime(it.DoneAt)
	if err != nil {
		return delivery.ChatStatus{}, false, fmt.Errorf("doneAt: %w", err)
	}
	st := delivery.ChatStatus{MessageID: id, ProviderID: it.MessageID, At: at, Detail: detail(*it.Status, it.Error)}
	switch it.Status.group() {
	case GroupDelivered:
		st.Status = messaging.StatusDelivered
	case GroupUndeliverable, GroupExpired, GroupRejected:
		st.Status = messaging.StatusFailed
		st.Reason = FailureReason(*it.Status, it.Error)
	default:
		return st, false, nil
	}
	return st, true, nil
}

func (a *Adapter) seenOf(it report) (delivery.ChatStatus, error) {
	id, err := messageIDOf(it)
	if err != nil {
		return delivery.ChatStatus{}, err
	}
	at, err := parseTime(it.SeenAt)
	if err != nil {
		return delivery.ChatStatus{}, fmt.Errorf("seenAt: %w", err)
	}
	return delivery.ChatStatus{MessageID: id, ProviderID: it.MessageID, Status: messaging.StatusSeen, Detail: "SEEN", At: at}, nil
}

func (a *Adapter) inboundOf(it report) (delivery.ChatInbound, error) {
	if it.MessageID == "" {
		return delivery.ChatInbound{}, errors.New("messageId is missing")
	}
	phone := strings.TrimPrefix(strings.TrimSpace(it.From), "+")
	if phone == "" {
		phone = strings.TrimPrefix(strings.TrimSpace(it.Sender), "+")
	}
	if phone == "" {
		return delivery.ChatInbound{}, errors.New("the sender's number is missing")
	}
	at, err := parseTime(it.ReceivedAt)
	if err != nil {
		return delivery.ChatInbound{}, fmt.Errorf("receivedAt: %w", err)
	}
	in := delivery.ChatInbound{ServiceID: a.s.ServiceID, CompanyID: a.s.CompanyID, Sender: it.To,
		Kind: delivery.InboundText, Phone: phone, OptionIndex: -1, At: at}
	m := it.Message
	switch strings.ToUpper(m.Type) {
	case "TEXT":
		in.Text = m.Text
	case "FILE":
		in.Text = strings.TrimSpace(m.FileName + " " + m.URL)
	default:
		return delivery.ChatInbound{}, fmt.Errorf("message type %q is not TEXT or FILE", m.Type)
	}
	if id, idx, ok := parseTracking(m.TrackingData, m.Text); ok {
		in.MessageID = id
		if idx >= 0 && strings.EqualFold(m.Type, "TEXT") {
			in.Kind, in.OptionIndex = delivery.InboundReply, idx
		}
	} else if id, err := messaging.ParseID(it.CallbackData); err == nil {
		in.MessageID = id
	}
	return in, nil
}

// fresh is b without the reports taken before. Its keys are recorded in
// one call of the guard (chatprovider.SeenAll: one store write).
func (a *Adapter) fresh(ctx context.Context, b batch) (batch, error) {
	until := a.s.Now().Add(replayWindow)
	// Pending reports are remembered too, so that a post of nothing but
	// them again is a replay.
	keys := make([]string, 0, len(b.pendingKeys)+len(b.statusKeys)+len(b.inboundKeys))
	keys = append(append(append(keys, b.pendingKeys...), b.statusKeys...), b.inboundKeys...)
	seen, err := chatprovider.SeenAll(ctx, a.replays, keys, until)
	var out batch
	for i, dup := range seen {
		if dup && a.failed.take(keys[i]) {
			seen[i] = false // posted again after Herald failed to store it
		} else if dup {
			continue
		}
		out.keys = append(out.keys, keys[i])
	}
	if err != nil {
		a.forget(ctx, out.keys)
		return batch{}, err
	}
	statuses := seen[len(b.pendingKeys):]
	for i := range b.statusKeys {
		if !statuses[i] {
			out.statuses = append(out.statuses, b.statuses[i])
		}
	}
	inbound := statuses[len(b.statusKeys):]
	for i := range b.inboundKeys {
		if !inbound[i] {
			out.inbound = append(out.inbound, b.inbound[i])
		}
	}
	return out, nil
}

// forget lets Infobip's next post of keys through: the guard forgets
// them when it can, and the adapter remembers them as failed in any
// case (a guard may lack Forget, or fail at it). The adapter's memory is
// its process's: when the guard cannot forget, the next post is taken
// only by the same process.
func (a *Adapter) forget(ctx context.Context, keys []string) {
	until := a.s.Now().Add(replayWindow)
	for _, k := range keys {
		_, _ = a.failed.Seen(ctx, k, until) // records k; never fails
	}
	f, ok := a.replays.(chatprovider.ReplayForgetter)
	if !ok {
		return
	}
	for _, k := range keys {
		if err := f.Forget(ctx, k); err != nil {
			a.log.WarnContext(ctx, "infobip report: replay guard could not forget a report", "err", err)
		}
	}
}

// report hands b to the Reporter: its statuses in one call.
func (a *Adapter) report(ctx context.Context, b batch) error {
	if len(b.statuses) > 0 {
		if _, err := a.s.Reporter.ChatStatuses(ctx, b.statuses); err != nil {
			return fmt.Errorf("report %d statuses: %w", len(b.statuses), err)
		}
	}
	for _, in := range b.inbound {
		out, err := a.s.Reporter.ChatInbound(ctx, in)
		if err != nil {
			if out == delivery.ChatEventRefused || messaging.IsCode(err, messaging.Invalid) {
				// Refused for good (an answer outside the survey's
				// options): sending it again would not help.
				a.log.WarnContext(ctx, "infobip inbound message refused", "err", err)
				continue
			}
			return fmt.Errorf("report inbound message: %w", err)
		}
	}
	return nil
}

// parseTime reads Infobip's times (yyyy-MM-dd'T'HH:mm:ss.SSSZ, whose
// offset may have no colon, or RFC 3339); zero when empty.
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000-0700", "2006-01-02T15:04:05-0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time", s)
}

// writeError writes Herald's error body.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": http.StatusText(status), "message": msg})
}
