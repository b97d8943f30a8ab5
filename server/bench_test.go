package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/heraldhq/herald/campaign"
)

// BenchmarkAddMessage measures the transactional add-message endpoint end
// to end through the handler (auth, routing, decoding, admission on the
// memstore, encoding, access log to a discarding logger).
func BenchmarkAddMessage(b *testing.B) {
	b.Run("log=discard", func(b *testing.B) { benchAddMessage(b, func(c *envConfig) { c.quiet = true }) })
	b.Run("log=json", func(b *testing.B) { benchAddMessage(b, func(c *envConfig) { c.logTo = io.Discard }) })
}

func benchAddMessage(b *testing.B, opt func(*envConfig)) {
	e := newEnv(b, withLimits(campaign.Limits{MaxPending: 1 << 30}), func(c *envConfig) { c.noVerify = true }, opt)
	tpl := e.smsTemplate("otp", "Your code is {{code}}")
	tx := e.transactional("sms", tpl)
	path := "/api/v1/sms/campaigns/" + tx + "/messages"
	body := []byte(`{"phoneNumber":"+447700900123","externalUserId":"user-42","placeholders":{"code":"123456"}}`)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	u, err := url.Parse(path)
	if err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			// A request as the http server hands it over, without the cost
			// of parsing one from text.
			r := (&http.Request{Method: http.MethodPost, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header: http.Header{"X-Api-Key": {e.key}, "Content-Type": {"application/json"}},
				Body:   io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Host: "herald.test",
				RemoteAddr: "127.0.0.1:1234", RequestURI: path}).WithContext(ctx)
			w := httptest.NewRecorder()
			e.h.ServeHTTP(w, r)
			if w.Code != http.StatusAccepted {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
}

// BenchmarkBulkRequest200k measures reading a bulk request with the most
// recipients allowed (200,000, about 13 MB of JSON) as a stream, and
// screening them: the company's capacity is too small, so each request
// ends in a 429 once the recipients are read and checked.
func BenchmarkBulkRequest200k(b *testing.B) {
	e := newEnv(b, withLimits(campaign.Limits{MaxPending: 1}), func(c *envConfig) { c.noVerify = true; c.quiet = true })
	tpl := e.smsTemplate("promo", "Hi {{name}}")
	var buf bytes.Buffer
	buf.WriteString(`{"templateId":"` + tpl + `","recipients":[`)
	for i := range 200_000 {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"phoneNumber":"+4477009%05d","placeholders":{"name":"n%d"}}`, i%100_000, i)
	}
	buf.WriteString("]}")
	body := buf.Bytes()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/sms/promotional", bytes.NewReader(body))
		r.Header.Set("X-API-Key", e.key)
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		if w.Code != http.StatusTooManyRequests {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
