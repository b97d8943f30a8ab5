package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// Bounds of a batched callback (docs/chat-provider.md).
const (
	// MaxBatchEvents is the most events one batched callback carries.
	MaxBatchEvents = 1000
	// MaxEventIDBytes is the longest id of a batched event.
	MaxEventIDBytes = 128
)

// batchEvent is one event of a batched callback: the body of a single
// callback and the event's own id.
type batchEvent struct {
	callbackBody
	ID string `json:"id"`
}

// isBatch reports whether body is a batched callback: a JSON array.
func isBatch(body []byte) bool {
	for _, c := range body {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '['
	}
	return false
}

// replayKey is the replay key of a batched event's id.
func (h *callbackHandler) replayKey(id string) string {
	return h.cfg.ReplayScope + "id:" + id
}

// serveBatch handles a verified batched callback: a JSON array of events,
// each with its own id. The ids are the replay keys, recorded in one call
// of the guard; the events taken before are skipped. The fresh events are
// applied in order, runs of status events in one ChatStatuses call each
// (one store write). Malformed events are refused one by one (400, naming
// them) and the others taken; on a store failure (500) the events stored
// before it stay stored and remembered, and the keys of the rest are
// forgotten, so that a resend of the same body stores each event once.
func (h *callbackHandler) serveBatch(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte) {
	// The slice is sized ahead from the ids' keys: decoding appends to
	// it, and growing it by reflection cost a fifth of the decoding.
	bs := make([]batchEvent, 0, min(bytes.Count(body, []byte(`"id"`)), MaxBatchEvents)+1)
	if err := jsonv1.Unmarshal(body, &bs); err != nil {
		h.cfg.Logger.WarnContext(ctx, "chat callback refused", "err", err)
		writeError(w, http.StatusBadRequest, "Bad Request", "malformed JSON: "+err.Error())
		return
	}
	if len(bs) == 0 || len(bs) > MaxBatchEvents {
		writeError(w, http.StatusBadRequest, "Bad Request",
			fmt.Sprintf("a batched callback carries 1 to %d events, not %d", MaxBatchEvents, len(bs)))
		return
	}
	evs := make([]event, len(bs))
	valid := make([]int, 0, len(bs)) // indexes of the events well formed
	keys := make([]string, 0, len(bs))
	ids := make(map[string]struct{}, len(bs))
	var bad []string
	for i := range bs {
		b := &bs[i]
		var err error
		switch _, twice := ids[b.ID]; {
		case b.ID == "":
			err = errors.New("id is missing")
		case len(b.ID) > MaxEventIDBytes:
			err = fmt.Errorf("id longer than %d bytes", MaxEventIDBytes)
		case twice:
			err = fmt.Errorf("id %q given twice", b.ID)
		default:
			ids[b.ID] = struct{}{}
			evs[i], err = h.eventOf(&b.callbackBody)
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("event %d: %v", i, err))
			continue
		}
		valid = append(valid, i)
		keys = append(keys, h.replayKey(b.ID))
	}

	if h.batchOnce(ctx, w, r, evs, valid, keys, bad) {
		return
	}
	var fresh []int // indexes into bs of the events not taken before
	if len(keys) > 0 {
		seen, err := chatprovider.SeenAll(ctx, h.cfg.Replays, keys, h.cfg.Now().Add(ReplayHold))
		if err != nil {
			// The keys this call recorded are forgotten: none was taken.
			for k, dup := range seen {
				if !dup {
					h.forget(ctx, keys[k])
				}
			}
			h.cfg.Logger.ErrorContext(ctx, "chat callback: replay guard failed", "err", err)
			writeError(w, http.StatusServiceUnavailable, "Service Unavailable", "the callback could not be checked; send it again")
			return
		}
		fresh = make([]int, 0, len(keys))
		for k, dup := range seen {
			if !dup {
				fresh = append(fresh, valid[k])
			}
		}
	}
	if len(fresh) == 0 && len(bad) == 0 {
		h.cfg.Logger.WarnContext(ctx, "chat callback refused: taken before", "remote", r.RemoteAddr)
		writeError(w, http.StatusUnauthorized, "Unauthorized", "every event of this callback was taken before")
		return
	}

	stored, bad, err := h.applyBatch(ctx, bs, evs, fresh, bad)
	if err != nil {
		for _, i := range fresh[stored:] {
			h.forget(ctx, h.replayKey(bs[i].ID))
		}
		h.cfg.Logger.ErrorContext(ctx, "chat callback not stored", "events", len(fresh)-stored, "err", err)
		writeError(w, http.StatusInternalServerError, "Internal Server Error",
			fmt.Sprintf("event %d and the events after it were not stored; send the callback again "+
				"(the events stored are not taken twice)", fresh[stored]))
		return
	}
	if len(bad) > 0 {
		h.cfg.Logger.WarnContext(ctx, "chat callback: events refused", "refused", len(bad), "taken", len(fresh))
		writeError(w, http.StatusBadRequest, "Bad Request", strings.Join(bad, "; ")+"; the other events were taken")
		return
	}
	w.WriteHeader(http.StatusOK)
}

// batchOnce reports the status events of a batch with their replay keys
// in one store write, when the Reporter can (delivery.OnceReporter), its
// store is the replay guard, and every event well formed (valid, keys
// theirs) is a status event; it then answers and returns true. The
// events taken before are skipped; a failed write stores nothing and
// remembers no key, so that the resend is taken whole.
func (h *callbackHandler) batchOnce(ctx context.Context, w http.ResponseWriter, r *http.Request, evs []event, valid []int,
	keys []string, bad []string) bool {
	or, ok := h.cfg.Reporter.(delivery.OnceReporter)
	if !ok || len(keys) == 0 {
		return false
	}
	ss := make([]delivery.ChatStatus, len(valid))
	for k, i := range valid {
		if evs[i].status == nil {
			return false
		}
		ss[k] = *evs[i].status
	}
	until := h.cfg.Now().Add(ReplayHold)
	rk := make([]delivery.ReplayKey, len(keys))
	for k, key := range keys {
		rk[k] = delivery.ReplayKey{Key: key, Until: until}
	}
	seen, _, ok, err := or.ChatStatusesOnce(ctx, h.cfg.Replays, rk, ss, nil)
	if !ok {
		return false
	}
	h.answerOnce(ctx, w, r, seen, bad, err)
	return true
}

// applyBatch reports the events fresh names, in order: each run of status
// events in one ChatStatuses call, the other events one by one. An event
// the Reporter refused for good (messaging.Invalid) joins bad and its key
// is forgotten. On another error it returns how many of fresh were
// handled before the failing run: those are stored or refused, the
// others are not.
func (h *callbackHandler) applyBatch(ctx context.Context, bs []batchEvent, evs []event, fresh []int,
	bad []string) (int, []string, error) {
	statuses := make([]delivery.ChatStatus, 0, len(fresh))
	run := 0 // the first of fresh in statuses
	for k, i := range fresh {
		ev := evs[i]
		if ev.status != nil {
			if len(statuses) == 0 {
				run = k
			}
			statuses = append(statuses, *ev.status)
			continue
		}
		if len(statuses) > 0 {
			if _, err := h.cfg.Reporter.ChatStatuses(ctx, statuses); err != nil {
				return run, bad, fmt.Errorf("report %d statuses: %w", len(statuses), err)
			}
			statuses = statuses[:0]
		}
		if _, err := h.cfg.Reporter.ChatInbound(ctx, ev.inbound); err != nil {
			if !messaging.IsCode(err, messaging.Invalid) {
				return k, bad, fmt.Errorf("report a %s event: %w", ev.kind, err)
			}
			h.forget(ctx, h.replayKey(bs[i].ID))
			bad = append(bad, fmt.Sprintf("event %d: %v", i, err))
		}
	}
	if len(statuses) > 0 {
		if _, err := h.cfg.Reporter.ChatStatuses(ctx, statuses); err != nil {
			return run, bad, fmt.Errorf("report %d statuses: %w", len(statuses), err)
		}
	}
	return len(fresh), bad, nil
}
