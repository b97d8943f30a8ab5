// Command apiload measures the public API of a running herald binary on
// loopback: how long a 200,000-recipient POST /api/v1/sms/promotional takes
// to reach Ready, the server's peak memory meanwhile, and the throughput and
// latency of the transactional add-message endpoint.
//
// It builds nothing and fakes nothing: it starts the herald binary it is
// given (build one with `go build -o /tmp/herald ./cmd/herald`) on a
// fresh database, provisions a company through the admin API, and drives
// the server over HTTP like a client would. Every request it makes is
// bounded by -timeout; the whole run by the sizes given.
//
//	go run ./bench/apiload -herald /tmp/herald -db sqlite
//	go run ./bench/apiload -herald /tmp/herald -db 'postgres://postgres@127.0.0.1:5432/herald_bench?sslmode=disable'
//
// With -db sqlite the database is a new file in a temporary directory; a
// Postgres database is used as it is (give it an empty one).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type options struct {
	herald      string
	db          string
	recipients  int
	bulkRuns    int
	addDuration time.Duration
	addWorkers  int
	timeout     time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.herald, "herald", "", "path of the herald binary (required)")
	flag.StringVar(&o.db, "db", "sqlite", `"sqlite" (a new file) or a postgres:// URL of an empty database`)
	flag.IntVar(&o.recipients, "recipients", 200_000, "recipients per bulk request")
	flag.IntVar(&o.bulkRuns, "bulk-runs", 3, "bulk requests, one after the other")
	flag.DurationVar(&o.addDuration, "add-duration", 10*time.Second, "how long to drive add-message")
	flag.IntVar(&o.addWorkers, "add-workers", 16, "concurrent add-message clients")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Second, "bound on any one wait")
	flag.Parse()
	if o.herald == "" {
		fmt.Fprintln(os.Stderr, "apiload: -herald is required (go build -o /tmp/herald ./cmd/herald)")
		os.Exit(2)
	}
	if err := run(context.Background(), o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "apiload:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "herald-apiload-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	dbURL := o.db
	if dbURL == "sqlite" {
		dbURL = "sqlite://" + filepath.Join(dir, "herald.db")
	}
	srv, err := startHerald(ctx, o.herald, dbURL, dir, o.timeout)
	if err != nil {
		return err
	}
	defer srv.stop()

	c := &client{base: srv.base, http: &http.Client{
		Timeout:   o.timeout,
		Transport: &http.Transport{MaxIdleConnsPerHost: o.addWorkers * 2, MaxConnsPerHost: o.addWorkers * 2},
	}}
	if err := c.provision(ctx, srv.adminToken); err != nil {
		return err
	}
	fmt.Fprintf(out, "herald %s on %s\n", o.herald, redact(dbURL))
	baseline, _ := peakRSS(srv.cmd.Process.Pid)
	fmt.Fprintf(out, "server peak RSS after start: %.1f MiB\n", mib(baseline))

	body := bulkBody(c.templateID, o.recipients)
	fmt.Fprintf(out, "bulk request body: %.1f MiB, %d recipients\n", mib(int64(len(body))), o.recipients)
	for i := range o.bulkRuns {
		accepted, ready, err := c.bulkToReady(ctx, body, o.timeout)
		if err != nil {
			return fmt.Errorf("bulk run %d: %w", i+1, err)
		}
		peak, _ := peakRSS(srv.cmd.Process.Pid)
		fmt.Fprintf(out, "bulk run %d: 202 after %v, Ready after %v (%.0f recipients/s); server peak RSS so far %.1f MiB\n",
			i+1, accepted.Round(time.Millisecond), ready.Round(time.Millisecond), float64(o.recipients)/ready.Seconds(), mib(peak))
	}

	res, err := c.addMessages(ctx, o.addWorkers, o.addDuration)
	if err != nil {
		return fmt.Errorf("add-message load: %w", err)
	}
	fmt.Fprintf(out, "add-message: %d workers for %v: %d requests, %.0f requests/s, p50 %v, p99 %v, max %v, errors %d\n",
		o.addWorkers, o.addDuration, res.n, res.rate, res.p50, res.p99, res.max, res.errors)
	peak, _ := peakRSS(srv.cmd.Process.Pid)
	fmt.Fprintf(out, "server peak RSS over the whole run: %.1f MiB\n", mib(peak))
	return nil
}

// server is a running herald binary.
type server struct {
	cmd        *exec.Cmd
	base       string
	adminToken string
	exited     chan error
}

func startHerald(ctx context.Context, bin, dbURL, dir string, timeout time.Duration) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	token := "apiload-admin-token"
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = append(os.Environ(),
		"HERALD_ADDR="+addr,
		"HERALD_DATABASE_URL="+dbURL,
		"HERALD_ADMIN_TOKEN="+token,
		"HERALD_MAX_PENDING=100000000",
		"HERALD_LOG_LEVEL=warn",
	)
	logf, err := os.Create(filepath.Join(dir, "herald.log"))
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &server{cmd: cmd, base: "http://" + addr, adminToken: token, exited: make(chan error, 1)}
	go func() { s.exited <- cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(s.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case err := <-s.exited:
			log, _ := os.ReadFile(filepath.Join(dir, "herald.log"))
			return nil, fmt.Errorf("herald exited before it was ready (%v):\n%s", err, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("herald not ready in time")
		}
	}
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// peakRSS reads the peak resident set size (VmHWM) of a process.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read process status: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmHWM %q: %w", v, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, errors.New("no VmHWM in process status")
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func redact(u string) string {
	if i := strings.Index(u, "@"); i > 0 && strings.HasPrefix(u, "postgres") {
		if j := strings.Index(u, "://"); j > 0 {
			return u[:j+3] + "…" + u[i:]
		}
	}
	return u
}

// client drives the API.
type client struct {
	base       string
	http       *http.Client
	apiKey     string
	templateID string
	campaignID string // transactional campaign for add-message
}

// do sends a JSON request and decodes a JSON answer into out (when not
// nil); a status other than want is an error carrying the body.
func (c *client) do(ctx context.Context, method, path string, auth [2]string, body []byte, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth[0] != "" {
		req.Header.Set(auth[0], auth[1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

func (c *client) api(ctx context.Context, method, path string, body any, want int, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	return c.do(ctx, method, "/api/v1"+path, [2]string{"X-API-Key", c.apiKey}, data, want, out)
}

// provision creates an active company with a key, an approved sender, an
// SMS template and a transactional campaign.
func (c *client) provision(ctx context.Context, adminToken string) error {
	admin := [2]string{"Authorization", "Bearer " + adminToken}
	var company struct {
		ID string `json:"id"`
	}
	if err := c.do(ctx, "POST", "/admin/v1/companies", admin, []byte(`{"name":"Load test"}`), http.StatusCreated, &company); err != nil {
		return err
	}
	if err := c.do(ctx, "POST", "/admin/v1/companies/"+company.ID+"/activate", admin, nil, http.StatusOK, nil); err != nil {
		return err
	}
	var key struct {
		APIKey string `json:"apiKey"`
	}
	if err := c.do(ctx, "POST", "/admin/v1/companies/"+company.ID+"/api-keys", admin, nil, http.StatusCreated, &key); err != nil {
		return err
	}
	c.apiKey = key.APIKey
	var sender struct {
		ID int64 `json:"id"`
	}
	if err := c.do(ctx, "POST", "/admin/v1/companies/"+company.ID+"/sms-senders", admin, []byte(`{"senderId":"LOADTEST"}`), http.StatusCreated, &sender); err != nil {
		return err
	}
	if err := c.do(ctx, "POST", fmt.Sprintf("/admin/v1/sms-senders/%d/approve", sender.ID), admin, nil, http.StatusOK, nil); err != nil {
		return err
	}
	var tpl struct {
		ID string `json:"id"`
	}
	err := c.api(ctx, "POST", "/templates/sms", map[string]any{
		"name": "load", "templateContent": "Hello {{name}}, your code is {{code}}", "smsSenderId": sender.ID,
	}, http.StatusCreated, &tpl)
	if err != nil {
		return err
	}
	c.templateID = tpl.ID
	var camp struct {
		CampaignID string `json:"campaignId"`
	}
	err = c.api(ctx, "POST", "/sms/campaigns", map[string]any{"name": "load", "templateId": tpl.ID}, http.StatusCreated, &camp)
	if err != nil {
		return err
	}
	c.campaignID = camp.CampaignID
	return nil
}

// bulkBody is a promotional request to n distinct numbers, each with its
// own placeholder.
func bulkBody(templateID string, n int) []byte {
	var b bytes.Buffer
	b.Grow(n * 64)
	fmt.Fprintf(&b, `{"templateId":%q,"placeholders":{"code":"4711"},"recipients":[`, templateID)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"phoneNumber":"+4479%08d","externalUserId":"u%d","placeholders":{"name":"N%d"}}`, i, i, i)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// bulkToReady sends the bulk request and polls the campaign until it is
// Ready; it returns when the 202 came and when Ready was seen, both from
// the start of the request.
func (c *client) bulkToReady(ctx context.Context, body []byte, timeout time.Duration) (accepted, ready time.Duration, err error) {
	start := time.Now()
	var res struct {
		CampaignID   string `json:"campaignId"`
		MessageCount int    `json:"messageCount"`
		Status       string `json:"status"`
	}
	if err := c.do(ctx, "POST", "/api/v1/sms/promotional", [2]string{"X-API-Key", c.apiKey}, body, http.StatusAccepted, &res); err != nil {
		return 0, 0, err
	}
	accepted = time.Since(start)
	for {
		var camp struct {
			Status        string `json:"status"`
			TotalMessages int    `json:"totalMessages"`
			FailureReason string `json:"failureReason"`
		}
		if err := c.api(ctx, "GET", "/campaigns/"+res.CampaignID, nil, http.StatusOK, &camp); err != nil {
			return 0, 0, err
		}
		switch camp.Status {
		case "Ready":
			if camp.TotalMessages != res.MessageCount {
				return 0, 0, fmt.Errorf("Ready with %d messages, %d accepted", camp.TotalMessages, res.MessageCount)
			}
			return accepted, time.Since(start), nil
		case "Failed":
			return 0, 0, fmt.Errorf("campaign failed: %s", camp.FailureReason)
		}
		if time.Since(start) > timeout {
			return 0, 0, fmt.Errorf("campaign still %s after %v", camp.Status, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type loadResult struct {
	n, errors     int
	rate          float64
	p50, p99, max time.Duration
}

// addMessages drives add-message from workers clients for d and measures
// each request's latency.
func (c *client) addMessages(ctx context.Context, workers int, d time.Duration) (loadResult, error) {
	path := "/sms/campaigns/" + c.campaignID + "/messages"
	lat := make([][]time.Duration, workers)
	errs := make([]int, workers)
	var firstErr error
	var errOnce sync.Once
	stop := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				body := fmt.Appendf(nil, `{"phoneNumber":"+4479%02d%06d","externalUserId":"w%d-%d","placeholders":{"name":"N","code":"1"}}`, w, i%1_000_000, w, i)
				t0 := time.Now()
				err := c.do(ctx, "POST", "/api/v1"+path, [2]string{"X-API-Key", c.apiKey}, body, http.StatusAccepted, nil)
				lat[w] = append(lat[w], time.Since(t0))
				if err != nil {
					errs[w]++
					errOnce.Do(func() { firstErr = err })
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	var r loadResult
	for w := range workers {
		all = append(all, lat[w]...)
		r.errors += errs[w]
	}
	if len(all) == 0 {
		return r, errors.New("no request completed")
	}
	slices.Sort(all)
	r.n = len(all)
	r.rate = float64(r.n) / elapsed.Seconds()
	r.p50 = all[len(all)/2].Round(10 * time.Microsecond)
	r.p99 = all[len(all)*99/100].Round(10 * time.Microsecond)
	r.max = all[len(all)-1].Round(10 * time.Microsecond)
	if r.errors > 0 {
		return r, fmt.Errorf("%d of %d requests failed, first: %w", r.errors, r.n, firstErr)
	}
	return r, nil
}
