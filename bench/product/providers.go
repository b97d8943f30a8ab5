package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
)

// providerResult is what one run against a provider's simulator measured.
type providerResult struct {
	provider, channel string
	messages          int
	toDelivered       time.Duration // from the start to every message Delivered, Seen or Failed
	toSeen            time.Duration // to every message Seen or Failed
	cpu               time.Duration // herald's, from the start to every message Seen or Failed
	simCPU            time.Duration
	events            int // status callbacks Herald stored
	requests          int // callback requests Herald answered
	failed            int
	// sendsCPU is Herald's CPU in a run of the same messages with the
	// simulator's callbacks off, from the start to every message Sent or
	// Failed; zero when there was none.
	sendsCPU time.Duration
	// sendsTime is how long that run took.
	sendsTime time.Duration
	// idlePerSec is Herald's CPU a second once the run was over; zero
	// when not measured.
	idlePerSec time.Duration
}

// perEvent is Herald's CPU per status event beyond the sends: the CPU of
// the run less that of the sends alone, over the events stored. It is
// NaN without a run of the sends alone.
func (r providerResult) perEvent() float64 {
	if r.sendsCPU == 0 || r.events == 0 {
		return math.NaN()
	}
	return float64((r.cpu - r.sendsCPU).Microseconds()) / float64(r.events)
}

func (r providerResult) print(w io.Writer) {
	fmt.Fprintf(w, "%-13s %-8s %d msgs: %.0f msgs/s to Delivered, %.0f to Seen; %d status events in %d callback requests; "+
		"herald CPU %.2f s: %.1f µs per status event, %.1f µs per message (simulator %.1f µs per message); failed %d\n",
		r.provider, r.channel, r.messages, float64(r.messages)/r.toDelivered.Seconds(), float64(r.messages)/r.toSeen.Seconds(),
		r.events, r.requests, r.cpu.Seconds(), perMessage(r.cpu, r.events), perMessage(r.cpu, r.messages), perMessage(r.simCPU, r.messages), r.failed)
	if r.sendsCPU > 0 {
		fmt.Fprintf(w, "%-13s %-8s sends alone (callbacks off): herald CPU %.2f s, %.1f µs per message, in %.1f s (with callbacks %.1f s); "+
			"callbacks: %.1f µs of herald CPU per status event beyond the sends\n",
			r.provider, r.channel, r.sendsCPU.Seconds(), perMessage(r.sendsCPU, r.messages), r.sendsTime.Seconds(), r.toSeen.Seconds(), r.perEvent())
		if r.idlePerSec > 0 && r.events > 0 {
			idle := time.Duration(float64(r.idlePerSec) * (r.toSeen - r.sendsTime).Seconds())
			fmt.Fprintf(w, "%-13s %-8s idle afterwards: herald CPU %.1f ms a second; the longer run's idle share: %.1f µs per status event\n",
				r.provider, r.channel, float64(r.idlePerSec.Microseconds())/1000, float64(idle.Nanoseconds())/1000/float64(r.events))
		}
	}
}

// providerSetup is how a run reaches one provider's simulator.
type providerSetup struct {
	provider, channel string
	sender            string // the service's providerServiceId
	baseSuffix        string // follows the simulator's address in the service's baseUrl
	whatsapp          bool   // templates name a providerTemplate
}

// providerSetups are the runs -provider all makes: Herald's own protocol
// first, as the reference.
func providerSetups() []providerSetup {
	return []providerSetup{
		{provider: "herald", channel: "viber", sender: "load-test"},
		{provider: "vonage", channel: "viber", sender: "16105550100"},
		{provider: "vonage", channel: "whatsapp", sender: "16105550100", whatsapp: true},
		{provider: "infobip", channel: "viber", sender: "HeraldDemo"},
		{provider: "meta-whatsapp", channel: "whatsapp", sender: "100000000000002", baseSuffix: "/v23.0", whatsapp: true},
	}
}

// runProviders runs the chat benchmark against the simulator of each
// provider -provider names ("all": every one), each on a new database.
func runProviders(ctx context.Context, o options, dir string, out io.Writer) error {
	fmt.Fprintf(out, "%d chat messages a run through a chat service of each provider, herald %s on %s\n", o.messages, o.herald, drive.Redact(o.db))
	ran := 0
	for _, s := range providerSetups() {
		if o.provider != "all" && o.provider != s.provider && o.provider != s.provider+"/"+s.channel {
			continue
		}
		if ran > 0 && o.db != "sqlite" {
			fmt.Fprintf(out, "(a Postgres database serves one run: %s/%s skipped)\n", s.provider, s.channel)
			continue
		}
		var sends providerResult
		if o.db == "sqlite" && o.sendsFirst {
			var err error
			if sends, err = runProvider(ctx, o, dir, s, false); err != nil {
				return fmt.Errorf("%s/%s, sends alone: %w", s.provider, s.channel, err)
			}
		}
		res, err := runProvider(ctx, o, dir, s, true)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", s.provider, s.channel, err)
		}
		res.sendsCPU, res.sendsTime = sends.cpu, sends.toSeen
		res.print(out)
		ran++
	}
	if ran == 0 {
		return fmt.Errorf("-provider %q: want all, herald, vonage, vonage/viber, vonage/whatsapp, infobip or meta-whatsapp", o.provider)
	}
	return nil
}

// runProvider starts herald simulate chat -provider in its own process
// and herald serve on a new database, sets a chat service up through the
// admin API (the first of the database: its callbacks are at
// /callbacks/chat/1, where the simulator posts), sends a bulk of
// SimpleText messages and waits until every message is Seen or Failed.
// Without callbacks the simulator is given no callback URL (it posts
// nothing), and the run lasts until every message is Sent or Failed, as
// Herald's metrics count them: the cost of the sends alone.
func runProvider(ctx context.Context, o options, dir string, s providerSetup, callbacks bool) (providerResult, error) {
	simAddr, err := drive.FreeAddr()
	if err != nil {
		return providerResult{}, err
	}
	heraldAddr, err := drive.FreeAddr()
	if err != nil {
		return providerResult{}, err
	}
	callbackURL := "http://" + heraldAddr + "/callbacks/chat/1"
	if !callbacks {
		callbackURL = ""
	}
	var sim drive.Child
	var creds string
	if s.provider == "herald" {
		creds = `{"token":"bench-token","callbackSecret":"bench-secret"}`
		args := []string{"simulate", "chat", "-addr", simAddr, "-token", "bench-token", "-callback-url", callbackURL,
			"-callback-secret", "bench-secret", "-delivered-delay", o.receiptDelay.String(), "-callback-batch", strconv.Itoa(o.chatBatch)}
		if err := sim.Start(exec.CommandContext(ctx, o.herald, args...), filepath.Join(dir, "chatsim.log"), "chat provider simulator at", o.timeout); err != nil {
			return providerResult{}, fmt.Errorf("the chat simulator: %w", err)
		}
	} else {
		args := []string{"simulate", "chat", "-provider", s.provider, "-channel", s.channel, "-addr", simAddr, "-callback-url", callbackURL,
			"-rate", "1000000"}
		if err := sim.Start(exec.CommandContext(ctx, o.herald, args...), filepath.Join(dir, "chatsim.log"), "simulator (", o.timeout); err != nil {
			return providerResult{}, fmt.Errorf("the %s simulator: %w", s.provider, err)
		}
		line, err := sim.WaitLine("demo credentials: ", o.timeout)
		if err != nil {
			sim.Stop()
			return providerResult{}, fmt.Errorf("the %s simulator's credentials: %w", s.provider, err)
		}
		_, creds, _ = strings.Cut(line, "demo credentials: ")
	}
	defer sim.Stop()

	dbURL := o.db
	if o.db == "sqlite" {
		dbURL = "sqlite://" + filepath.Join(dir, fmt.Sprintf("herald-%s-%d.db", s.provider, time.Now().UnixNano()))
	}
	srv, err := drive.StartHerald(ctx, o.herald, dbURL, dir, []string{"HERALD_ADDR=" + heraldAddr, "HERALD_WEBHOOK_ALLOW=loopback"}, o.timeout)
	if err != nil {
		return providerResult{}, err
	}
	defer srv.Stop()
	c := &drive.Client{Base: srv.Base, HTTP: &http.Client{Timeout: o.timeout}}
	companyID, err := c.NewCompany(ctx, srv.AdminToken)
	if err != nil {
		return providerResult{}, err
	}
	service, err := json.Marshal(map[string]any{"brandName": "Load test", "providerServiceId": s.sender, "provider": s.provider,
		"channel": s.channel, "baseUrl": "http://" + simAddr + s.baseSuffix, "credentials": json.RawMessage(creds)})
	if err != nil {
		return providerResult{}, fmt.Errorf("chat service: %w", err)
	}
	var svc struct {
		ID int64 `json:"id"`
	}
	if err := c.Do(ctx, "POST", "/admin/v1/companies/"+companyID+"/chat-services", [2]string{"Authorization", "Bearer " + srv.AdminToken},
		service, http.StatusCreated, &svc); err != nil {
		return providerResult{}, err
	}
	if svc.ID != 1 {
		return providerResult{}, fmt.Errorf("chat service %d: the simulator posts to /callbacks/chat/1; give an empty database", svc.ID)
	}
	tpl := map[string]any{"name": "load", "messageType": "SimpleText", "templateContent": "Hello {{name}}, your code is {{code}}", "chatServiceId": svc.ID}
	if s.whatsapp {
		tpl["typeSpecificConfig"] = map[string]any{"providerTemplate": map[string]any{"name": "code", "language": "en", "parameters": []string{"{{code}}"}}}
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := c.API(ctx, "POST", "/templates/chat", tpl, http.StatusCreated, &created); err != nil {
		return providerResult{}, err
	}
	id, _, _, err := c.BulkToReadyAt(ctx, "/api/v1/chat/send", drive.BulkBody(created.ID, o.messages), o.timeout)
	if err != nil {
		return providerResult{}, err
	}
	pid := srv.Cmd.Process.Pid
	before, err := cpuTimes(pid, sim.Pid())
	if err != nil {
		return providerResult{}, err
	}
	start := time.Now()
	if err := c.API(ctx, "POST", "/campaigns/"+id+"/start", nil, http.StatusOK, nil); err != nil {
		return providerResult{}, err
	}
	res := providerResult{provider: s.provider, channel: s.channel, messages: o.messages}
	for !callbacks {
		counts, err := chatMetrics(ctx, c)
		if err != nil {
			return providerResult{}, err
		}
		if counts["Sent"]+counts["Failed"] >= o.messages {
			res.toDelivered, res.toSeen, res.failed = time.Since(start), time.Since(start), counts["Failed"]
			break
		}
		if time.Since(start) > o.timeout {
			return providerResult{}, fmt.Errorf("after %v: %d sent, %d failed of %d: %w", o.timeout, counts["Sent"], counts["Failed"], o.messages, drive.ErrTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for callbacks {
		var camp struct {
			DeliveredCount int `json:"deliveredCount"`
			SeenCount      int `json:"seenCount"`
			FailedCount    int `json:"failedCount"`
		}
		if err := c.API(ctx, "GET", "/campaigns/"+id, nil, http.StatusOK, &camp); err != nil {
			return providerResult{}, err
		}
		if res.toDelivered == 0 && camp.DeliveredCount+camp.FailedCount >= o.messages {
			res.toDelivered = time.Since(start)
		}
		if camp.SeenCount+camp.FailedCount >= o.messages {
			res.toSeen, res.failed = time.Since(start), camp.FailedCount
			if res.toDelivered == 0 {
				res.toDelivered = res.toSeen
			}
			break
		}
		if time.Since(start) > o.timeout {
			return providerResult{}, fmt.Errorf("after %v: %d delivered, %d seen, %d failed of %d: %w",
				o.timeout, camp.DeliveredCount, camp.SeenCount, camp.FailedCount, o.messages, drive.ErrTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	after, err := cpuTimes(pid, sim.Pid())
	if err != nil {
		return providerResult{}, err
	}
	res.cpu, res.simCPU = after[0]-before[0], after[1]-before[1]
	if res.events, res.requests, err = callbackMetrics(ctx, c); err != nil {
		return providerResult{}, err
	}
	if o.idleWindow > 0 {
		// Herald's idle work, once the run is over: the difference of
		// two runs of different lengths counts it too.
		idleFrom, err := cpuTimes(pid)
		if err != nil {
			return providerResult{}, err
		}
		time.Sleep(o.idleWindow)
		idleTo, err := cpuTimes(pid)
		if err != nil {
			return providerResult{}, err
		}
		res.idlePerSec = time.Duration(float64(idleTo[0]-idleFrom[0]) / o.idleWindow.Seconds())
	}
	return res, nil
}

// callbackMetrics reads, from Herald's /metrics, the status events its
// callbacks stored and the callback requests it answered.
func callbackMetrics(ctx context.Context, c *drive.Client) (events, requests int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/metrics", nil)
	if err != nil {
		return 0, 0, fmt.Errorf("metrics: %w", err)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		name, value, ok := strings.Cut(line, "} ")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("metrics: %q: %w", line, err)
		}
		switch {
		case strings.HasPrefix(name, `herald_chat_callbacks_total{kind="status",outcome="stored"`):
			events += int(n)
		case strings.HasPrefix(name, "herald_http_requests_total{") && strings.Contains(name, `handler="callbacks"`):
			requests += int(n)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("metrics: %w", err)
	}
	return events, requests, nil
}
