package webhook_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/heraldhq/herald/webhook"
)

// A receiver checks each request's signature against its raw body before
// it trusts the event, and answers 2xx once it has kept it.
func ExampleVerify() {
	const secret = "whsec_example" // as shown when the endpoint was registered
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), webhook.DefaultTolerance); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		fmt.Println("accepted event", r.Header.Get(webhook.EventIDHeader))
		w.WriteHeader(http.StatusNoContent)
	})

	// What Herald sends, signed with the endpoint's secret.
	body := `{"id":"0193a5c2-0000-7000-8000-000000000001","type":"message.status","createdAt":"2026-11-26T10:00:00Z","data":{}}`
	req := httptest.NewRequest(http.MethodPost, "/herald-events", strings.NewReader(body))
	req.Header.Set(webhook.EventIDHeader, "0193a5c2-0000-7000-8000-000000000001")
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(time.Now(), []byte(body), secret))
	rec := httptest.NewRecorder()
	receiver.ServeHTTP(rec, req)
	fmt.Println(rec.Code)

	// The same body signed with another secret is refused.
	req = httptest.NewRequest(http.MethodPost, "/herald-events", strings.NewReader(body))
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(time.Now(), []byte(body), "whsec_someone_else"))
	rec = httptest.NewRecorder()
	receiver.ServeHTTP(rec, req)
	fmt.Println(rec.Code)
	// Output:
	// accepted event 0193a5c2-0000-7000-8000-000000000001
	// 204
	// 401
}

// A receiver reads one event, or a batch of an endpoint registered with
// batch settings, the same way once the signature verified; it skips the
// ids it has taken, since a failed batch comes again whole.
func ExampleParseEvents() {
	body := []byte(`{"events":[` +
		`{"id":"0197a0b0-0000-7000-8000-000000000001","type":"message.status","createdAt":"2026-11-27T10:00:00.000Z","data":{"status":"Sent"}},` +
		`{"id":"0197a0b0-0000-7000-8000-000000000002","type":"message.status","createdAt":"2026-11-27T10:00:01.000Z","data":{"status":"Delivered"}}]}`)
	seen := map[string]bool{"0197a0b0-0000-7000-8000-000000000001": true}
	events, err := webhook.ParseEvents(body)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range events {
		if seen[e.ID] {
			fmt.Println("skipped", e.ID)
			continue
		}
		seen[e.ID] = true
		fmt.Println(e.Type, string(e.Data))
	}
	// Output:
	// skipped 0197a0b0-0000-7000-8000-000000000001
	// message.status {"status":"Delivered"}
}
