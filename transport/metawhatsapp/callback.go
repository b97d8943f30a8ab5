package metawhatsapp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// SignatureHeader carries a webhook's signature: "sha256=" and the hex
// HMAC-SHA256 of the raw body keyed with the app secret.
const SignatureHeader = "X-Hub-Signature-256"

// MaxWebhookBytes caps a webhook body; a larger one is answered 413.
const MaxWebhookBytes = 4 << 20

// maxChallenge caps the hub.challenge echoed back.
const maxChallenge = 512

// Sign returns the X-Hub-Signature-256 value of body under appSecret, for
// the simulator and tests.
func Sign(appSecret string, body []byte) string {
	return "sha256=" + hex.EncodeToString(sign([]byte(appSecret), body))
}

// The JSON of a webhook: the reference's Webhook, Entry, Change and
// value objects, with the fields Herald reads.
type webhook struct {
	Object string `json:"object"`
	Entry  []struct {
		ID      string `json:"id"`
		Changes []struct {
			Field string `json:"field"`
			Value struct {
				Metadata struct {
					PhoneNumberID string `json:"phone_number_id"`
				} `json:"metadata"`
				Statuses []inStatus  `json:"statuses"`
				Messages []inMessage `json:"messages"`
			} `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

type inStatus struct {
	ID                    string    `json:"id"`
	Status                string    `json:"status"`
	Timestamp             string    `json:"timestamp"`
	RecipientID           string    `json:"recipient_id"`
	BizOpaqueCallbackData string    `json:"biz_opaque_callback_data"`
	Errors                []inError `json:"errors"`
}

type inError struct {
	Code      int    `json:"code"`
	Title     string `json:"title"`
	Message   string `json:"message"`
	ErrorData struct {
		Details string `json:"details"`
	} `json:"error_data"`
}

type inMessage struct {
	From      string `json:"from"`
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	Text      *struct {
		Body string `json:"body"`
	} `json:"text"`
	Interactive *struct {
		Type        string   `json:"type"`
		ButtonReply *inReply `json:"button_reply"`
		ListReply   *inReply `json:"list_reply"`
	} `json:"interactive"`
	Button *struct {
		Payload string `json:"payload"`
		Text    string `json:"text"`
	} `json:"button"`
}

type inReply struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// ServeHTTP serves the service's webhook: Meta's GET verification and
// its signed POSTs.
func (a *Adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		a.verify(w, r)
	case http.MethodPost:
		a.receive(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed", "webhooks are GET (verification) or POST")
	}
}

// verify answers the subscription handshake: hub.challenge when hub.mode
// is subscribe and hub.verify_token the service's verify token.
func (a *Adapter) verify(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	token := q.Get("hub.verify_token")
	challenge := q.Get("hub.challenge")
	if q.Get("hub.mode") != "subscribe" || subtle.ConstantTimeCompare([]byte(token), []byte(a.creds.VerifyToken)) != 1 {
		a.log.WarnContext(r.Context(), "webhook verification refused: wrong mode or verify token")
		writeError(w, http.StatusForbidden, "Forbidden", "verification refused")
		return
	}
	if challenge == "" || len(challenge) > maxChallenge {
		writeError(w, http.StatusBadRequest, "Bad Request", "hub.challenge is missing or too long")
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, challenge)
}

func (a *Adapter) receive(w http.ResponseWriter, r *http.Request) {
	// The buffer is sized from the length the request announces, up to
	// 256 KiB before any byte is verified: io.ReadAll grew a batch's body
	// step by step, a fifth of the handler's CPU.
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), 256<<10)+bytes.MinRead))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, MaxWebhookBytes))
	body := buf.Bytes()
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "Payload Too Large", "the webhook body is too large")
			return
		}
		writeError(w, http.StatusBadRequest, "Bad Request", "the webhook body could not be read")
		return
	}
	mac, ok := a.checkSignature(r.Header.Get(SignatureHeader), body)
	if !ok {
		a.log.WarnContext(r.Context(), "webhook refused: missing or wrong signature", "remote", r.RemoteAddr)
		writeError(w, http.StatusUnauthorized, "Unauthorized", "the signature does not verify")
		return
	}
	ctx := r.Context()
	key := "meta-whatsapp:" + strconv.FormatInt(a.s.ServiceID, 10) + ":" + hex.EncodeToString(mac)
	var statuses []delivery.ChatStatus
	var inbound []delivery.ChatInbound
	parsed := false
	if or, ok := a.s.Reporter.(delivery.OnceReporter); ok {
		var wh webhook
		if jsonv1.Unmarshal(body, &wh) == nil {
			statuses, inbound = a.parse(ctx, &wh)
			parsed = true
			if len(statuses) > 0 && len(inbound) == 0 && a.takeOnce(ctx, w, r, or, key, statuses) {
				return
			}
		}
	}
	seen, err := a.replays.Seen(ctx, key, a.now().Add(ReplayHold))
	if err != nil {
		a.log.ErrorContext(ctx, "webhook: replay guard failed", "err", err)
		writeError(w, http.StatusServiceUnavailable, "Service Unavailable", "try again")
		return
	}
	if seen && !a.retakes.take(key) {
		a.log.WarnContext(ctx, "webhook refused: replay of a body taken before", "remote", r.RemoteAddr)
		writeError(w, http.StatusUnauthorized, "Unauthorized", "this webhook was taken before")
		return
	}
	if !parsed {
		var wh webhook
		if err := jsonv1.Unmarshal(body, &wh); err != nil {
			a.forget(ctx, key)
			writeError(w, http.StatusBadRequest, "Bad Request", "the webhook body is not the JSON of a webhook")
			return
		}
		statuses, inbound = a.parse(ctx, &wh)
	}
	if err := a.report(ctx, statuses, inbound); err != nil {
		a.forget(ctx, key)
		a.log.ErrorContext(ctx, "webhook: report failed; Meta will send it again", "err", err)
		writeError(w, http.StatusInternalServerError, "Internal Server Error", "the webhook could not be stored")
		return
	}
	w.WriteHeader(http.StatusOK)
}

// takeOnce takes the statuses of a webhook that carries nothing else in
// one store write, its key with them, when the Reporter's store is the
// replay guard (delivery.OnceReporter); it then answers and returns true.
// A failed write stores no status and keeps no key, so that Meta's resend
// is taken.
func (a *Adapter) takeOnce(ctx context.Context, w http.ResponseWriter, r *http.Request, or delivery.OnceReporter, key string,
	statuses []delivery.ChatStatus) bool {
	keys := []delivery.ReplayKey{{Key: key, Until: a.now().Add(ReplayHold)}}
	seen, _, ok, err := or.ChatStatusesOnce(ctx, a.replays, keys, statuses, make([]int, len(statuses)))
	switch {
	case !ok:
		return false
	case err != nil:
		a.log.ErrorContext(ctx, "webhook: report failed; Meta will send it again", "err", err)
		writeError(w, http.StatusInternalServerError, "Internal Server Error", "the webhook could not be stored")
	case seen[0]:
		a.log.WarnContext(ctx, "webhook refused: replay of a body taken before", "remote", r.RemoteAddr)
		writeError(w, http.StatusUnauthorized, "Unauthorized", "this webhook was taken before")
	default:
		w.WriteHeader(http.StatusOK)
	}
	return true
}

// checkSignature verifies "sha256=<hex>" in constant time and returns
// the MAC.
func (a *Adapter) checkSignature(h string, body []byte) ([]byte, bool) {
	hexSig, ok := strings.CutPrefix(strings.TrimSpace(h), "sha256=")
	if !ok {
		return nil, false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return nil, false
	}
	want := sign(a.macKey, body)
	return want, hmac.Equal(got, want)
}

func (a *Adapter) forget(ctx context.Context, key string) {
	if f, ok := a.replays.(chatprovider.ReplayForgetter); ok {
		err := f.Forget(context.WithoutCancel(ctx), key)
		if err == nil {
			return
		}
		a.log.ErrorContext(ctx, "webhook: replay guard could not forget a failed webhook", "err", err)
	}
	// The guard keeps the key: this adapter takes Meta's resend once all
	// the same.
	a.retakes.add(key, a.now().Add(ReplayHold))
}

// parse collects the statuses and inbound messages of the changes of
// this service's phone number; ctx is the webhook's request.
func (a *Adapter) parse(ctx context.Context, wh *webhook) ([]delivery.ChatStatus, []delivery.ChatInbound) {
	var statuses []delivery.ChatStatus
	var inbound []delivery.ChatInbound
	if wh.Object != "whatsapp_business_account" {
		a.log.WarnContext(ctx, "webhook ignored: unknown object", "object", wh.Object)
		return nil, nil
	}
	for _, e := range wh.Entry {
		for _, c := range e.Changes {
			if c.Field != "messages" {
				continue
			}
			if id := c.Value.Metadata.PhoneNumberID; id != "" && id != a.s.Sender {
				a.log.WarnContext(ctx, "webhook change ignored: another phone number", "phoneNumberId", id)
				continue
			}
			for _, s := range c.Value.Statuses {
				if st, ok := a.status(ctx, s); ok {
					statuses = append(statuses, st)
				}
			}
			for _, m := range c.Value.Messages {
				if in, ok := a.inbound(ctx, m); ok {
					inbound = append(inbound, in)
				}
			}
		}
	}
	return statuses, inbound
}

// status maps one status object; sent and unknown statuses report
// nothing.
func (a *Adapter) status(ctx context.Context, s inStatus) (delivery.ChatStatus, bool) {
	st := delivery.ChatStatus{ProviderID: s.ID, At: unixTime(s.Timestamp), Detail: s.Status}
	if id, err := messaging.ParseID(s.BizOpaqueCallbackData); err == nil {
		st.MessageID = id
	}
	switch s.Status {
	case "delivered":
		st.Status = messaging.StatusDelivered
	case "read":
		st.Status = messaging.StatusSeen
	case "failed":
		st.Status = messaging.StatusFailed
		st.Reason, st.Detail = delivery.ReasonRejected, "failed"
		if len(s.Errors) > 0 {
			e := s.Errors[0]
			st.Reason, _ = reasonFor(e.Code, 0, e.ErrorData.Details)
			st.Detail = detail(e.Code, e.Title)
		}
	default:
		return st, false
	}
	if st.MessageID.IsZero() && st.ProviderID == "" {
		a.log.WarnContext(ctx, "webhook status ignored: it names no message")
		return st, false
	}
	return st, true
}

// inbound maps one message a person sent: a text, a reply to a survey
// option (interactive button_reply or list_reply), or a template's quick
// reply (button). Other kinds report nothing.
func (a *Adapter) inbound(ctx context.Context, m inMessage) (delivery.ChatInbound, bool) {
	in := delivery.ChatInbound{ServiceID: a.s.ServiceID, Phone: m.From, OptionIndex: -1, At: unixTime(m.Timestamp)}
	reply := func(id, text string) {
		in.Text = text
		if msg, idx, ok := ParseOptionID(id); ok {
			in.Kind, in.MessageID, in.OptionIndex = delivery.InboundReply, msg, idx
			return
		}
		in.Kind = delivery.InboundText
	}
	switch {
	case m.Type == "text" && m.Text != nil:
		in.Kind, in.Text = delivery.InboundText, m.Text.Body
	case m.Type == "interactive" && m.Interactive != nil && m.Interactive.ButtonReply != nil:
		reply(m.Interactive.ButtonReply.ID, m.Interactive.ButtonReply.Title)
	case m.Type == "interactive" && m.Interactive != nil && m.Interactive.ListReply != nil:
		reply(m.Interactive.ListReply.ID, m.Interactive.ListReply.Title)
	case m.Type == "button" && m.Button != nil:
		reply(m.Button.Payload, m.Button.Text)
	default:
		a.log.DebugContext(ctx, "webhook message ignored", "type", m.Type)
		return in, false
	}
	if in.Phone == "" {
		a.log.WarnContext(ctx, "webhook message ignored: no sender")
		return in, false
	}
	return in, true
}

// report hands the statuses to the Reporter in one call, then each
// inbound message; an error, or an outcome saying a report was not
// stored, fails the webhook.
func (a *Adapter) report(ctx context.Context, statuses []delivery.ChatStatus, inbound []delivery.ChatInbound) error {
	rep := a.s.Reporter
	if len(statuses) > 0 {
		outs, err := rep.ChatStatuses(ctx, statuses)
		if err != nil {
			return errorf("chat statuses: %w", err)
		}
		for i, o := range outs {
			if o == delivery.ChatEventError {
				return errorf("chat status %d of %d not stored", i+1, len(statuses))
			}
		}
	}
	for _, in := range inbound {
		o, err := rep.ChatInbound(ctx, in)
		if o == delivery.ChatEventRefused {
			a.log.WarnContext(ctx, "webhook inbound refused", "kind", in.Kind, "err", err)
			continue
		}
		if err != nil {
			return errorf("chat inbound: %w", err)
		}
		if o == delivery.ChatEventError {
			return errorf("chat inbound not stored")
		}
	}
	return nil
}

// unixTime reads Meta's timestamps: Unix seconds in a string. Zero when
// absent or malformed (the Reporter then takes the time it stores).
func unixTime(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > 253402300799 {
		return time.Time{}
	}
	return time.Unix(n, 0).UTC()
}

// writeError writes the error body of Herald's callback endpoints.
func writeError(w http.ResponseWriter, status int, name, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": name, "message": msg})
}
