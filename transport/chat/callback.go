package chat

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// SignatureHeader carries the callback signature.
const SignatureHeader = "X-Content-Signature"

// DefaultMaxCallbackBytes is the default cap on a callback body.
const DefaultMaxCallbackBytes = 64 << 10

// Sign returns the X-Content-Signature of a callback body: the lower-case
// hex HMAC-SHA256 of body keyed with secret.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// CallbackConfig configures CallbackHandler.
type CallbackConfig struct {
	// Secret is the provider callback secret the signatures are keyed
	// with. Required.
	Secret string
	// Reporter stores what the callbacks report. Required.
	Reporter delivery.Reporter
	// MaxBodyBytes caps a callback body; a larger one is answered 413.
	// Default 64 KiB.
	MaxBodyBytes int64
	// Logger receives refused callbacks and handler failures. Default:
	// discard.
	Logger *slog.Logger
	// Now tells the time of an event that carries no timestamp, and
	// the time of the replay guard. Default time.Now.
	Now func() time.Time
	// Replays remembers the callbacks taken, by their signature, for
	// ReplayHold: a body taken before is refused 401. Nil: a guard in
	// memory of the handler. A guard that is a
	// chatprovider.ReplayForgetter forgets the key of a callback not
	// taken (answered 400 or 500), so that the provider's resend is
	// judged again; another keeps it, and that resend is refused.
	Replays chatprovider.ReplayGuard
	// ReplayScope starts every key the handler records in Replays, so
	// that one guard serves several handlers: "herald:{service id}:" for
	// a chat service. Default "herald:".
	ReplayScope string
}

// callbackHandler serves POST /callbacks/chat.
type callbackHandler struct {
	cfg   CallbackConfig
	macs  sync.Pool // hash.Hash keyed with the secret
	bufs  sync.Pool // *bytes.Buffer
	limit int64
}

// CallbackHandler returns the handler of the provider's callbacks (mount
// it at POST /callbacks/chat). For each request it
//
//   - answers 405 to any method but POST;
//   - reads the body through http.MaxBytesReader: 413 past
//     cfg.MaxBodyBytes, 408 when it does not arrive in time (its read
//     deadline passed), so that the provider sends it again;
//   - checks X-Content-Signature, the hex HMAC-SHA256 of the raw body keyed
//     with cfg.Secret, in constant time before parsing anything: 401 when
//     missing or wrong;
//   - records the signature in cfg.Replays for ReplayHold: 401 when it
//     was recorded before (a replay; nothing is reported), 503 when the
//     guard fails;
//   - parses a status or reply event: 400 when the JSON is malformed, the
//     event kind or status is unknown, tracking_data is not a message id,
//     the timestamp is past the year 9999, or a survey object has no or a
//     negative option_index;
//   - reports a status event through cfg.Reporter.ChatStatuses, anything
//     else through its ChatInbound, and answers 200 only when it returned
//     nil, 400 when it refused the report for good (an answer outside the
//     survey's options), 500 otherwise so that the provider sends the
//     event again.
//
// A body that is a JSON array is a batched callback, each event with its
// own id (serveBatch): the ids are its replay keys, its status events are
// reported in one ChatStatuses call, and its malformed events are refused
// one by one while the others are taken.
//
// When cfg.Reporter is a delivery.OnceReporter whose store is cfg.Replays
// (Herald's wiring), a status event and its key, or a batch of status
// events and their ids, are written in one store transaction instead
// (delivery.OnceUpdater): a failed write (500) stores no event and keeps
// no key, whatever happens to the process after it.
//
// Error answers carry a JSON body {"error": ..., "message": ...}. A
// status event becomes a delivery.ChatStatus: delivered and seen as
// such, expired a failure for delivery.ReasonExpired, failed a failure
// for the reason of its error_code (ReasonOf), Detail the code. A reply
// with a survey object becomes a delivery.ChatInbound of kind
// InboundReply (OptionIndex from it), a reply without one InboundText,
// and unsubscribed and subscribed their kinds, Sender the service_id. At
// is the millisecond timestamp in UTC (cfg.Now when absent). Unknown JSON
// fields are ignored.
//
// CallbackHandler panics when cfg.Secret or cfg.Reporter is missing: an
// endpoint that anybody could feed must not be served.
func CallbackHandler(cfg CallbackConfig) http.Handler {
	if cfg.Secret == "" {
		panic("chat: CallbackConfig.Secret is required")
	}
	if cfg.Reporter == nil {
		panic("chat: CallbackConfig.Reporter is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Replays == nil {
		cfg.Replays = chatprovider.NewMemoryGuard(cfg.Now, chatprovider.DefaultGuardKeys)
	}
	if cfg.ReplayScope == "" {
		cfg.ReplayScope = "herald:"
	}
	h := &callbackHandler{cfg: cfg, limit: cfg.MaxBodyBytes}
	if h.limit <= 0 {
		h.limit = DefaultMaxCallbackBytes
	}
	key := []byte(cfg.Secret)
	h.macs.New = func() any { return hmac.New(sha256.New, key) }
	h.bufs.New = func() any { return bytes.NewBuffer(make([]byte, 0, 1024)) }
	return h
}

// callbackBody is the JSON of a callback, status and reply alike.
type callbackBody struct {
	Event        string          `json:"event"`
	MessageToken messageToken    `json:"message_token"`
	TrackingData string          `json:"tracking_data"`
	Status       string          `json:"status"`
	ErrorCode    int             `json:"error_code"`
	Timestamp    int64           `json:"timestamp"`
	PhoneNumber  string          `json:"phone_number"`
	Text         string          `json:"text"`
	Survey       *callbackSurvey `json:"survey"`
	ServiceID    string          `json:"service_id"`
}

// callbackSurvey is the survey object of a reply.
type callbackSurvey struct {
	OptionIndex *int   `json:"option_index"`
	OptionValue string `json:"option_value"`
}

// timedOut reports whether a read of the body failed on its deadline:
// os.ErrDeadlineExceeded (which Herald's server reports for a body too
// slow) or a network timeout.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// ServeHTTP implements http.Handler.
func (h *callbackHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed", "callbacks are POSTed")
		return
	}
	buf := h.bufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= int(h.limit)+bytes.MinRead {
			h.bufs.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, h.limit)); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, "Payload Too Large",
				fmt.Sprintf("a callback body is at most %d bytes", h.limit))
			return
		}
		if timedOut(err) {
			// Not the provider's fault for good: a 4xx it may treat as
			// final would lose the event, so the answer says to retry.
			writeError(w, http.StatusRequestTimeout, "Request Timeout", "the body did not arrive in time; send the callback again")
			return
		}
		writeError(w, http.StatusBadRequest, "Bad Request", "could not read the body")
		return
	}
	body := buf.Bytes()

	var sum [sha256.Size]byte
	mac, ok := h.verify(r.Header.Get(SignatureHeader), body, sum[:0])
	if !ok {
		h.cfg.Logger.WarnContext(r.Context(), "chat callback refused: bad signature", "remote", r.RemoteAddr)
		writeError(w, http.StatusUnauthorized, "Unauthorized", "missing or wrong "+SignatureHeader)
		return
	}
	ctx := r.Context()
	if isBatch(body) {
		h.serveBatch(ctx, w, r, body)
		return
	}
	key := h.cfg.ReplayScope + hex.EncodeToString(mac)
	var ev event
	var perr error
	parsed := false
	if or, ok := h.cfg.Reporter.(delivery.OnceReporter); ok {
		// A status event and its key in one store write, when the
		// Reporter writes to the replay guard's store.
		ev, perr = h.parse(body)
		parsed = true
		if perr == nil && ev.status != nil {
			keys := []delivery.ReplayKey{{Key: key, Until: h.cfg.Now().Add(ReplayHold)}}
			seen, _, ok, err := or.ChatStatusesOnce(ctx, h.cfg.Replays, keys, []delivery.ChatStatus{*ev.status}, nil)
			if ok {
				h.answerOnce(ctx, w, r, seen, nil, err)
				return
			}
		}
	}
	seen, err := h.cfg.Replays.Seen(ctx, key, h.cfg.Now().Add(ReplayHold))
	if err != nil {
		h.cfg.Logger.ErrorContext(ctx, "chat callback: replay guard failed", "err", err)
		writeError(w, http.StatusServiceUnavailable, "Service Unavailable", "the callback could not be checked; send it again")
		return
	}
	if seen {
		h.cfg.Logger.WarnContext(ctx, "chat callback refused: taken before", "remote", r.RemoteAddr)
		writeError(w, http.StatusUnauthorized, "Unauthorized", "this callback was taken before")
		return
	}

	if !parsed {
		ev, perr = h.parse(body)
	}
	if perr != nil {
		h.forget(ctx, key)
		h.cfg.Logger.WarnContext(ctx, "chat callback refused", "err", perr)
		writeError(w, http.StatusBadRequest, "Bad Request", perr.Error())
		return
	}
	if ev.status != nil {
		_, err = h.cfg.Reporter.ChatStatuses(ctx, []delivery.ChatStatus{*ev.status})
	} else {
		_, err = h.cfg.Reporter.ChatInbound(ctx, ev.inbound)
	}
	if err != nil {
		h.forget(ctx, key)
		if messaging.IsCode(err, messaging.Invalid) {
			// Refused for good (an answer outside the survey's options):
			// sending it again would not help.
			writeError(w, http.StatusBadRequest, "Bad Request", err.Error())
			return
		}
		h.cfg.Logger.ErrorContext(ctx, "chat callback not stored", "event", ev.kind, "err", err)
		writeError(w, http.StatusInternalServerError, "Internal Server Error", "the event was not stored; send it again")
		return
	}
	w.WriteHeader(http.StatusOK)
}

// answerOnce answers a callback whose status events were reported with
// their keys in one store write (delivery.OnceReporter): 500 when the
// write failed (nothing was stored nor remembered), 401 when every event
// was taken before and none refused, 400 naming the events refused (bad)
// when some were, else 200.
func (h *callbackHandler) answerOnce(ctx context.Context, w http.ResponseWriter, r *http.Request, seen []bool, bad []string, err error) {
	if err != nil {
		h.cfg.Logger.ErrorContext(ctx, "chat callback not stored", "err", err)
		writeError(w, http.StatusInternalServerError, "Internal Server Error", "the events were not stored; send the callback again")
		return
	}
	fresh := 0
	for _, dup := range seen {
		if !dup {
			fresh++
		}
	}
	switch {
	case fresh == 0 && len(bad) == 0:
		h.cfg.Logger.WarnContext(ctx, "chat callback refused: taken before", "remote", r.RemoteAddr)
		msg := "this callback was taken before"
		if len(seen) > 1 {
			msg = "every event of this callback was taken before"
		}
		writeError(w, http.StatusUnauthorized, "Unauthorized", msg)
	case len(bad) > 0:
		h.cfg.Logger.WarnContext(ctx, "chat callback: events refused", "refused", len(bad), "taken", fresh)
		writeError(w, http.StatusBadRequest, "Bad Request", strings.Join(bad, "; ")+"; the other events were taken")
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// verify checks a hex signature against body in constant time, and
// returns the signature (appended to dst) when it matches.
func (h *callbackHandler) verify(sig string, body, dst []byte) ([]byte, bool) {
	if sig == "" {
		return nil, false
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return nil, false
	}
	mac := h.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write(body)
	want := mac.Sum(dst)
	h.macs.Put(mac)
	return want, hmac.Equal(got, want)
}

// forget removes the key of a callback not taken from the replay guard,
// when the guard can forget, so that the provider's resend is judged
// again.
func (h *callbackHandler) forget(ctx context.Context, key string) {
	f, ok := h.cfg.Replays.(chatprovider.ReplayForgetter)
	if !ok {
		return
	}
	if err := f.Forget(context.WithoutCancel(ctx), key); err != nil {
		h.cfg.Logger.ErrorContext(ctx, "chat callback: the replay guard could not forget a callback not taken", "err", err)
	}
}

// maxTimestamp is the last millisecond of the year 9999, the latest event
// time accepted: a later one is no real time, and past it the stores
// cannot hold the time (Postgres refuses it, SQLite's microseconds
// overflow).
const maxTimestamp = 253402300799999

// event is a parsed callback: a status report, or what a person sent.
type event struct {
	kind    string
	status  *delivery.ChatStatus // status events
	inbound delivery.ChatInbound // the others
}

// Event names of the callbacks.
const (
	eventStatus       = "status"
	eventReply        = "reply"
	eventUnsubscribed = "unsubscribed"
	eventSubscribed   = "subscribed"
)

// parse turns a verified body into an event.
func (h *callbackHandler) parse(body []byte) (event, error) {
	var b callbackBody
	if err := jsonv1.Unmarshal(body, &b); err != nil {
		return event{}, fmt.Errorf("malformed JSON: %w", err)
	}
	return h.eventOf(&b)
}

// eventOf turns a decoded callback into an event.
func (h *callbackHandler) eventOf(b *callbackBody) (event, error) {
	var id messaging.ID
	switch b.Event {
	case eventUnsubscribed, eventSubscribed:
		if b.ServiceID == "" || b.PhoneNumber == "" {
			return event{}, fmt.Errorf("%s without service_id or phone_number", b.Event)
		}
	default:
		var err error
		if id, err = messaging.ParseID(b.TrackingData); err != nil {
			return event{}, fmt.Errorf("tracking_data: %w", err)
		}
	}
	if b.Timestamp > maxTimestamp {
		return event{}, fmt.Errorf("timestamp %d is past the year 9999", b.Timestamp)
	}
	at := h.cfg.Now().UTC()
	if b.Timestamp > 0 {
		at = time.UnixMilli(b.Timestamp).UTC()
	}
	ev := event{kind: b.Event}
	switch b.Event {
	case eventStatus:
		st := delivery.ChatStatus{MessageID: id, ProviderID: string(b.MessageToken), At: at}
		switch b.Status {
		case "delivered":
			st.Status = messaging.StatusDelivered
		case "seen":
			st.Status = messaging.StatusSeen
		case "expired":
			st.Status, st.Reason, st.Detail = messaging.StatusFailed, delivery.ReasonExpired, "expired"
		case "failed":
			st.Status, st.Reason, st.Detail = messaging.StatusFailed, ReasonOf(b.ErrorCode), strconv.Itoa(b.ErrorCode)
		default:
			return event{}, fmt.Errorf("unknown status %q", b.Status)
		}
		ev.status = &st
	case eventReply:
		ev.inbound = delivery.ChatInbound{Kind: delivery.InboundText, MessageID: id, Phone: b.PhoneNumber, Text: b.Text,
			OptionIndex: -1, At: at}
		if b.Survey != nil {
			switch {
			case b.Survey.OptionIndex == nil:
				return event{}, errors.New("survey without option_index")
			case *b.Survey.OptionIndex < 0:
				return event{}, fmt.Errorf("negative survey option_index %d", *b.Survey.OptionIndex)
			}
			ev.inbound.Kind, ev.inbound.OptionIndex = delivery.InboundReply, *b.Survey.OptionIndex
		}
	case eventUnsubscribed:
		ev.inbound = delivery.ChatInbound{Kind: delivery.InboundUnsubscribed, Sender: b.ServiceID, Phone: b.PhoneNumber, OptionIndex: -1, At: at}
	case eventSubscribed:
		ev.inbound = delivery.ChatInbound{Kind: delivery.InboundSubscribed, Sender: b.ServiceID, Phone: b.PhoneNumber, OptionIndex: -1, At: at}
	default:
		return event{}, fmt.Errorf("unknown event %q", b.Event)
	}
	return ev, nil
}

// writeError answers a JSON error body.
func writeError(w http.ResponseWriter, status int, name, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}{name, msg})
	_, _ = w.Write(append(b, '\n'))
}
