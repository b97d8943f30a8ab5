package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
)

// latency is the distribution of the times of one kind of request.
type latency struct {
	n             int
	p50, p99, max time.Duration
}

// latencyOf sorts ds and returns their distribution.
func latencyOf(ds []time.Duration) latency {
	if len(ds) == 0 {
		return latency{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration {
		i := int(q*float64(len(ds))+0.999999) - 1 // the nearest rank
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return latency{n: len(ds), p50: at(0.50), p99: at(0.99), max: ds[len(ds)-1]}
}

// target is a campaign whose recipients the reads look up: its company,
// its id, and its first recipient (drive.BulkBodyFrom).
type target struct {
	co    *company
	id    string
	first int
}

// readKind is a kind of request timed: the path of its request for a
// campaign and one of its recipients, and whether the answer found what
// the request looked for (an empty answer would time nothing useful).
type readKind struct {
	name  string
	path  func(t target, recipient int) string
	found func(t target, answer []byte) (bool, error)
}

// readKinds are the requests timed: GET /messages by phone number and by
// external user id (of a recipient of the target), GET /campaigns/{id}
// (the target) and GET /campaigns (the first page of the target's
// company).
func readKinds() []readKind {
	return []readKind{
		{"GET /messages?phoneNumber=", func(_ target, i int) string { return "/api/v1/messages?phoneNumber=" + drive.Phone(i) }, foundMessages},
		{"GET /messages?externalUserId=", func(_ target, i int) string { return "/api/v1/messages?externalUserId=u" + strconv.Itoa(i) }, foundMessages},
		{"GET /campaigns/{id}", func(t target, _ int) string { return "/api/v1/campaigns/" + t.id }, func(t target, b []byte) (bool, error) {
			var c struct {
				ID string `json:"campaignId"`
			}
			err := json.Unmarshal(b, &c)
			return c.ID == t.id, err
		}},
		{"GET /campaigns", func(target, int) string { return "/api/v1/campaigns" }, foundMessages},
	}
}

// summaryKind is the survey summary of the target.
func summaryKind() readKind {
	return readKind{"GET /survey-results/{id}/summary", func(t target, _ int) string { return "/api/v1/survey-results/" + t.id + "/summary" },
		func(_ target, b []byte) (bool, error) {
			var s struct {
				TotalResponses int `json:"totalResponses"`
			}
			err := json.Unmarshal(b, &s)
			return s.TotalResponses > 0, err
		}}
}

// foundMessages reports whether a list answer counts something.
func foundMessages(_ target, b []byte) (bool, error) {
	var page struct {
		TotalCount int `json:"totalCount"`
	}
	err := json.Unmarshal(b, &page)
	return page.TotalCount > 0, err
}

// timeReads sends warmup and then n requests of kind one after the
// other, each for a random target and a random one of its recipients, and
// returns the distribution of the times of the n, from the request's
// start to the last byte of its answer.
func timeReads(ctx context.Context, hc *http.Client, kind readKind, targets []target, recipients, warmup, n int, r *rand.Rand) (latency, error) {
	ds := make([]time.Duration, 0, n)
	for j := range warmup + n {
		t := targets[r.IntN(len(targets))]
		path := kind.path(t, t.first+r.IntN(recipients))
		body, d, err := get(ctx, hc, t.co.client.Base+path, t.co.client.APIKey)
		if err != nil {
			return latency{}, fmt.Errorf("%s: %w", kind.name, err)
		}
		ok, err := kind.found(t, body)
		if err != nil {
			return latency{}, fmt.Errorf("GET %s: decode the answer: %w", path, err)
		}
		if !ok {
			return latency{}, fmt.Errorf("GET %s found nothing: %.300s", path, body)
		}
		if j >= warmup {
			ds = append(ds, d)
		}
	}
	return latencyOf(ds), nil
}

// get sends a GET with the key and returns the answer's body and how long
// it took to come in full; a status other than 200 is an error.
func get(ctx context.Context, hc *http.Client, url, key string) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w", url, err)
	}
	req.Header.Set("X-API-Key", key)
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w", url, err)
	}
	body, err := io.ReadAll(resp.Body)
	d := time.Since(start)
	resp.Body.Close()
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: read the answer: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("GET %s: status %d: %.300s", url, resp.StatusCode, body)
	}
	return body, d, nil
}

// bulkRun is what one timed bulk measured.
type bulkRun struct {
	id                string
	messages          int
	accepted, ready   time.Duration // from the start of the request
	prepareCPU        time.Duration // herald's, from the request to Ready
	delivery          time.Duration // from the start to every message final
	deliveryCPU       time.Duration // herald's, over the delivery
	delivered, failed int
	peakRSS           int64 // of the herald process, at the end
}

// finalRate is the final statuses per second of the delivery.
func (b bulkRun) finalRate() float64 {
	if b.delivery <= 0 {
		return 0
	}
	return float64(b.messages) / b.delivery.Seconds()
}

// timeReady posts a bulk of n recipients from first on to
// /api/v1/sms/promotional as co and times it to Ready, with the CPU the
// herald process srv used meanwhile; the campaign is not started.
func timeReady(ctx context.Context, srv *drive.Server, co *company, first, n int, timeout time.Duration) (bulkRun, error) {
	body := drive.BulkBodyFrom(co.client.TemplateID, first, n)
	pid := srv.Cmd.Process.Pid
	cpu0, err := drive.CPUTime(pid)
	if err != nil {
		return bulkRun{}, err
	}
	b := bulkRun{messages: n}
	if b.id, b.accepted, b.ready, err = co.client.BulkToReady(ctx, body, timeout); err != nil {
		return bulkRun{}, fmt.Errorf("bulk to Ready: %w", err)
	}
	cpu1, err := drive.CPUTime(pid)
	if err != nil {
		return bulkRun{}, err
	}
	b.prepareCPU = cpu1 - cpu0
	return b, nil
}

// timeBulk is timeReady, then starts the campaign and times its delivery
// until every message is Delivered or Failed, with the CPU the herald
// process used.
func timeBulk(ctx context.Context, srv *drive.Server, co *company, first, n int, timeout time.Duration) (bulkRun, error) {
	b, err := timeReady(ctx, srv, co, first, n, timeout)
	if err != nil {
		return bulkRun{}, err
	}
	pid := srv.Cmd.Process.Pid
	cpu1, err := drive.CPUTime(pid)
	if err != nil {
		return bulkRun{}, err
	}
	start := time.Now()
	if err := co.client.API(ctx, "POST", "/campaigns/"+b.id+"/start", nil, http.StatusOK, nil); err != nil {
		return bulkRun{}, fmt.Errorf("start the campaign: %w", err)
	}
	if b.delivered, b.failed, err = co.client.WaitFinal(ctx, b.id, timeout); err != nil {
		return bulkRun{}, err
	}
	b.delivery = time.Since(start)
	cpu2, err := drive.CPUTime(pid)
	if err != nil {
		return bulkRun{}, err
	}
	b.deliveryCPU = cpu2 - cpu1
	if b.peakRSS, err = drive.PeakRSS(pid); err != nil {
		return bulkRun{}, err
	}
	return b, nil
}
