package chaos_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Sizes and times of the Postgres restart scenario.
const (
	pgRestartMessages = 5000
	pgDown            = 4 * time.Second
	probeEvery        = 100 * time.Millisecond
)

// probe is one request made while the database was down or coming back.
type probe struct {
	name       string
	status     int // 0: no answer
	retryAfter string
	at         time.Time
}

// TestPostgresRestarted stops the suite's Postgres cluster as a crash does
// (pg_ctl stop -m immediate) in the middle of a bulk SMS campaign and
// starts it again a few seconds later, while requests keep coming: they
// must be answered 503 with Retry-After, and the campaign completes once
// the database is back. SQLite has no server to restart.
func TestPostgresRestarted(t *testing.T) {
	chaosOnly(t)
	bin := heraldBinary(t)
	pg := postgres(t)
	log := newSubmitLog()
	sm := startSMSC(t, log, "", "127.0.0.1", 0)
	env := heraldEnv("HERALD_DATABASE_URL="+pg.database(t), "HERALD_SMPP_ADDR="+sm.addr())
	h := startHerald(t, bin, freeAddr(t), env)
	c := newClient(t, h.base(), newAnswers())
	co := c.provision("Acme")
	ph := phones(6, pgRestartMessages)
	id := c.smsCampaign(co, ph, "pg-restart")

	// The requests of the outage go through a client of their own, whose
	// answers are judged apart.
	outage := newClient(t, h.base(), newAnswers())
	outage.key = c.key
	direct := phones(7, 1000) // one number a direct send, in order
	var sent []string         // the direct sends accepted (202)
	sendOne := func() probe {
		p := direct[len(sent)]
		status, hdr, _, _ := outage.do("POST", "/api/v1/sms/send",
			nil, fmt.Sprintf(`{"messageContent":"Direct, chaos test","smsSenderId":%d,"recipients":[{"phoneNumber":"+%s","externalUserId":"pg-direct"}]}`, co.senderID, p))
		if status == http.StatusAccepted {
			sent = append(sent, p)
		}
		return probe{name: "POST /sms/send", status: status, retryAfter: header(hdr, "Retry-After"), at: time.Now()}
	}
	get := func(name, path string) probe {
		status, hdr, _, _ := outage.do("GET", path, nil, "")
		return probe{name: name, status: status, retryAfter: header(hdr, "Retry-After"), at: time.Now()}
	}
	probeAll := func() []probe {
		return []probe{get("GET /readyz", "/readyz"), get("GET /campaigns/{id}", "/api/v1/campaigns/"+id), sendOne()}
	}

	p := 0.2 + 0.4*newRand(t).Float64()
	began := time.Now()
	c.start(id)
	log.waitDistinct(t, int(p*pgRestartMessages), 2*time.Minute)
	log.mark("Postgres stopped (immediate) and started")
	stopped := time.Now()
	require.NoError(t, pg.stop("immediate"))
	var during []probe
	for time.Since(stopped) < pgDown {
		during = append(during, probeAll()...)
		time.Sleep(probeEvery)
	}
	require.NoError(t, pg.start())
	up := time.Now()
	var after []probe
	var firstOK time.Duration
	for deadline := up.Add(time.Minute); time.Now().Before(deadline); time.Sleep(probeEvery) {
		ps := probeAll()
		after = append(after, ps...)
		if ps[0].status == http.StatusOK && ps[1].status == http.StatusOK && ps[2].status == http.StatusAccepted {
			firstOK = time.Since(up)
			break
		}
	}
	require.NotZero(t, firstOK, "herald did not answer 2xx again within a minute of Postgres being back: %v", summarize(after))
	c.completed(id, 3*time.Minute)
	completed := time.Now()

	// Every direct send accepted, during the outage or after, is a
	// message, sent or final, that reached the SMSC. A request answered
	// otherwise may have been written too (its answer lost): noted.
	var msgs []messageJSON
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		msgs = c.messagesOf("pg-direct")
		done := 0
		for _, m := range msgs {
			if m.Status == "Delivered" || m.Status == "Sent" || m.Status == "Failed" {
				done++
			}
		}
		if len(msgs) >= len(sent) && done == len(msgs) {
			break
		}
	}
	byPhone := map[string]messageJSON{}
	for _, m := range msgs {
		require.NotContains(t, byPhone, m.PhoneNumber, "two messages to %s", m.PhoneNumber)
		byPhone[m.PhoneNumber] = m
		require.Contains(t, []string{"Delivered", "Sent", "Failed"}, m.Status, m.PhoneNumber)
	}
	for _, p := range sent {
		require.Contains(t, byPhone, p, "the direct send to %s was answered 202", p)
	}
	require.Empty(t, log.missing(sent), "direct sends accepted that never reached the SMSC")

	o := checkSMS(t, c, bin, env, id, "pg-restart", ph, log)
	f := newFigure("5 Postgres restarted", "postgres", pgRestartMessages, o)
	f.Times["database down"] = dur(up.Sub(stopped))
	f.Times["Postgres up to 2xx again"] = dur(firstOK)
	f.Times["Postgres up to Completed"] = dur(completed.Sub(up))
	f.Times["campaign"] = dur(completed.Sub(began))
	f.Answers = c.log.summary()
	f.Notes = append(f.Notes,
		"while down: "+summarize(during),
		"after the start, until 2xx: "+summarize(after),
		fmt.Sprintf("direct sends answered 202 during and after the outage: %d, all sent; messages of direct sends answered otherwise: %d", len(sent), len(msgs)-len(sent)))
	f.Notes = append(f.Notes, duplicateNotes(t, o.byFault)...)

	// The contract: a request herald cannot serve without its database is
	// a 503 with Retry-After. Until herald answers so, what it answers is
	// recorded and the assertion is skipped below.
	bad := undocumented(append(during, after...))
	if len(bad) > 0 && !outage503(during) {
		f.Notes = append(f.Notes, "NOT YET 503 + Retry-After on a database outage: "+summarize(bad))
		record(t, f)
		h.stop(30 * time.Second)
		t.Skipf("skipped the 503 + Retry-After assertion: herald's /readyz gives no Retry-After while the database is down (so the database-outage 503s have not landed); it answered %s", summarize(bad))
	}
	require.Empty(t, bad, "answers during the outage other than 2xx and 503 with Retry-After")
	record(t, f)
	h.stop(30 * time.Second)
}

// header returns the value of a header of a possibly missing answer.
func header(h http.Header, name string) string {
	if h == nil {
		return ""
	}
	return h.Get(name)
}

// undocumented returns the probes answered 5xx other than 503 with
// Retry-After, or not answered.
func undocumented(ps []probe) []probe {
	var out []probe
	for _, p := range ps {
		if p.status == 0 || (p.status >= 500 && (p.status != http.StatusServiceUnavailable || p.retryAfter == "")) {
			out = append(out, p)
		}
	}
	return out
}

// outage503 tells whether herald's /readyz answered 503 with Retry-After
// while the database was down: the sign that the database-outage 503s are
// in the binary.
func outage503(ps []probe) bool {
	for _, p := range ps {
		if p.name == "GET /readyz" && p.status == http.StatusServiceUnavailable && p.retryAfter != "" {
			return true
		}
	}
	return false
}

// summarize counts probes by request and answer.
func summarize(ps []probe) string {
	type key struct {
		name   string
		status int
		retry  bool
	}
	counts := map[key]int{}
	var order []key
	for _, p := range ps {
		k := key{p.name, p.status, p.retryAfter != ""}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	var parts []string
	for _, k := range order {
		s := fmt.Sprintf("%s %d", k.name, k.status)
		if k.status == 0 {
			s = k.name + " no answer"
		}
		if k.retry {
			s += " (Retry-After)"
		}
		parts = append(parts, fmt.Sprintf("%s x%d", s, counts[k]))
	}
	return strings.Join(parts, ", ")
}
