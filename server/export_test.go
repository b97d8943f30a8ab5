package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/heraldhq/herald/campaign"
)

// SendRequest is what DecodeSend read from a sending request.
type SendRequest struct {
	TemplateID   string
	Placeholders map[string]string
	Recipients   []campaign.Recipient
}

// DecodeSend runs the streaming decoder of sending requests on body (a
// bulk send: templateId, placeholders and recipients; direct refuses
// per-recipient placeholders) with at most limit recipients. It returns
// what was read, or the status and body a refused request is answered
// with.
func DecodeSend(body []byte, limit int, direct bool) (SendRequest, int, []byte) {
	var (
		req SendRequest
		ph  placeholderValues
	)
	recipients, err := decodeSendBody(bytes.NewReader(body), int64(len(body)), limit,
		sendFields{"templateId": &req.TemplateID, "placeholders": &ph}, direct)
	if err != nil {
		s := &server{log: slog.New(slog.DiscardHandler)}
		rec := httptest.NewRecorder()
		s.writeError(rec, httptest.NewRequest("POST", "/api/v1/sms/promotional", nil), err)
		return SendRequest{}, rec.Code, rec.Body.Bytes()
	}
	req.Placeholders, req.Recipients = ph, recipients
	return req, 0, nil
}

// BodyBudgetPeak returns the most request body bytes the handler h (of
// New) held at once so far.
func BodyBudgetPeak(h http.Handler) int64 { return h.(*server).budget.maxHeld() }
