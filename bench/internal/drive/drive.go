// Package drive starts a built herald binary as its own process on a
// fresh database and drives it through its HTTP API, as a client would:
// the load programs under bench/ measure the product with it.
package drive

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server is a running herald binary.
type Server struct {
	Cmd        *exec.Cmd
	Base       string // http://host:port
	AdminToken string
	exited     chan error
}

// StartHerald runs bin serve on dbURL as its own process, with env added
// to this process's environment, its log in dir/herald.log, and waits
// until /readyz answers 200. It listens on a free loopback port, or on
// the HERALD_ADDR env sets.
func StartHerald(ctx context.Context, bin, dbURL, dir string, env []string, timeout time.Duration) (*Server, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	for _, e := range env {
		if a, ok := strings.CutPrefix(e, "HERALD_ADDR="); ok {
			addr = a
		}
	}
	token := "apiload-admin-token"
	cmd := exec.CommandContext(ctx, bin, "serve")
	environ := os.Environ()
	if os.Getenv("HERALD_SECRET_KEY") == "" {
		// A fixed key: the load programs create webhooks and connectors.
		environ = append(environ, "HERALD_SECRET_KEY=6c6f61642070726f6772616d73206f6e6c792c206e6f74206120736563726574")
	}
	cmd.Env = append(append(environ, env...),
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
	s := &Server{Cmd: cmd, Base: "http://" + addr, AdminToken: token, exited: make(chan error, 1)}
	go func() { s.exited <- cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(s.Base + "/readyz")
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
			s.Stop()
			return nil, errors.New("herald not ready in time")
		}
	}
}

// Stop stops the server with SIGTERM, and kills it after 30 s.
func (s *Server) Stop() { terminate(s.Cmd.Process, s.exited, 30*time.Second) }

// terminate sends p SIGTERM and waits until exited yields (the process
// ended), killing p once grace has passed.
func terminate[T any](p *os.Process, exited <-chan T, grace time.Duration) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = p.Kill()
		<-exited
	}
}

// FreeAddr returns a loopback address with a port free now.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// PeakRSS reads the peak resident set size (VmHWM) of a process.
func PeakRSS(pid int) (int64, error) {
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

// MiB is b in mebibytes.
func MiB(b int64) float64 { return float64(b) / (1 << 20) }

// Redact hides the credentials of a Postgres URL.
func Redact(u string) string {
	if i := strings.Index(u, "@"); i > 0 && strings.HasPrefix(u, "postgres") {
		if j := strings.Index(u, "://"); j > 0 {
			return u[:j+3] + "…" + u[i:]
		}
	}
	return u
}

// Client drives the API.
type Client struct {
	Base       string // the server's http://host:port
	HTTP       *http.Client
	APIKey     string // set by Provision
	TemplateID string // an SMS template, set by Provision
	CampaignID string // a transactional SMS campaign, set by Provision
}

// Do sends a JSON request and decodes a JSON answer into out (when not
// nil); a status other than want is an error carrying the body.
func (c *Client) Do(ctx context.Context, method, path string, auth [2]string, body []byte, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth[0] != "" {
		req.Header.Set(auth[0], auth[1])
	}
	resp, err := c.HTTP.Do(req)
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

// API is Do on /api/v1 with the company's key and a JSON body.
func (c *Client) API(ctx context.Context, method, path string, body any, want int, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	return c.Do(ctx, method, "/api/v1"+path, [2]string{"X-API-Key", c.APIKey}, data, want, out)
}

// ProvisionChat creates an active company with a key, a chat service and
// a SimpleText chat template (c.TemplateID).
func (c *Client) ProvisionChat(ctx context.Context, adminToken string) error {
	companyID, err := c.NewCompany(ctx, adminToken)
	if err != nil {
		return err
	}
	var svc struct {
		ID int64 `json:"id"`
	}
	if err := c.Do(ctx, "POST", "/admin/v1/companies/"+companyID+"/chat-services", [2]string{"Authorization", "Bearer " + adminToken},
		[]byte(`{"brandName":"Load test","providerServiceId":"load-test"}`), http.StatusCreated, &svc); err != nil {
		return err
	}
	var tpl struct {
		ID string `json:"id"`
	}
	err = c.API(ctx, "POST", "/templates/chat", map[string]any{
		"name": "load", "messageType": "SimpleText", "templateContent": "Hello {{name}}, your code is {{code}}", "chatServiceId": svc.ID,
	}, http.StatusCreated, &tpl)
	if err != nil {
		return err
	}
	c.TemplateID = tpl.ID
	return nil
}

// NewCompany creates an active company with a key (c.APIKey) and returns
// its id, for programs that provision its senders, services and templates
// themselves.
func (c *Client) NewCompany(ctx context.Context, adminToken string) (string, error) {
	admin := [2]string{"Authorization", "Bearer " + adminToken}
	var company struct {
		ID string `json:"id"`
	}
	// Company names are unique: each run (and each company of a run) has its own.
	name := fmt.Appendf(nil, `{"name":"Load test %d"}`, time.Now().UnixNano())
	if err := c.Do(ctx, "POST", "/admin/v1/companies", admin, name, http.StatusCreated, &company); err != nil {
		return "", err
	}
	if err := c.Do(ctx, "POST", "/admin/v1/companies/"+company.ID+"/activate", admin, nil, http.StatusOK, nil); err != nil {
		return "", err
	}
	var key struct {
		APIKey string `json:"apiKey"`
	}
	if err := c.Do(ctx, "POST", "/admin/v1/companies/"+company.ID+"/api-keys", admin, nil, http.StatusCreated, &key); err != nil {
		return "", err
	}
	c.APIKey = key.APIKey
	return company.ID, nil
}

// Provision creates an active company with a key, an approved sender, an
// SMS template and a transactional campaign.
func (c *Client) Provision(ctx context.Context, adminToken string) error {
	admin := [2]string{"Authorization", "Bearer " + adminToken}
	companyID, err := c.NewCompany(ctx, adminToken)
	if err != nil {
		return err
	}
	var sender struct {
		ID int64 `json:"id"`
	}
	if err := c.Do(ctx, "POST", "/admin/v1/companies/"+companyID+"/sms-senders", admin, []byte(`{"senderId":"LOADTEST"}`), http.StatusCreated, &sender); err != nil {
		return err
	}
	if err := c.Do(ctx, "POST", fmt.Sprintf("/admin/v1/sms-senders/%d/approve", sender.ID), admin, nil, http.StatusOK, nil); err != nil {
		return err
	}
	var tpl struct {
		ID string `json:"id"`
	}
	err = c.API(ctx, "POST", "/templates/sms", map[string]any{
		"name": "load", "templateContent": "Hello {{name}}, your code is {{code}}", "smsSenderId": sender.ID,
	}, http.StatusCreated, &tpl)
	if err != nil {
		return err
	}
	c.TemplateID = tpl.ID
	var camp struct {
		CampaignID string `json:"campaignId"`
	}
	err = c.API(ctx, "POST", "/sms/campaigns", map[string]any{"name": "load", "templateId": tpl.ID}, http.StatusCreated, &camp)
	if err != nil {
		return err
	}
	c.CampaignID = camp.CampaignID
	return nil
}

// BulkBody is a promotional request to n distinct numbers, each with its
// own placeholder.
func BulkBody(templateID string, n int) []byte { return BulkBodyFrom(templateID, 0, n) }

// BulkBodyFrom is BulkBody to the n numbers from the first-th on.
func BulkBodyFrom(templateID string, first, n int) []byte {
	var b bytes.Buffer
	b.Grow(n * 64)
	fmt.Fprintf(&b, `{"templateId":%q,"placeholders":{"code":"4711"},"recipients":[`, templateID)
	for i := first; i < first+n; i++ {
		if i > first {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"phoneNumber":"+4479%08d","externalUserId":"u%d","placeholders":{"name":"N%d"}}`, i, i, i)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// Phone is the number BulkBodyFrom gives recipient i, as Herald stores it.
func Phone(i int) string { return fmt.Sprintf("4479%08d", i) }

// BulkToReady sends the bulk request to /api/v1/sms/promotional and
// polls the campaign until it is Ready; it returns the campaign's id, and
// when the 202 came and when Ready was seen, both from the start of the
// request.
func (c *Client) BulkToReady(ctx context.Context, body []byte, timeout time.Duration) (id string, accepted, ready time.Duration, err error) {
	return c.BulkToReadyAt(ctx, "/api/v1/sms/promotional", body, timeout)
}

// BulkToReadyAt is BulkToReady on another bulk endpoint (/api/v1/chat/send).
func (c *Client) BulkToReadyAt(ctx context.Context, path string, body []byte, timeout time.Duration) (id string, accepted, ready time.Duration, err error) {
	start := time.Now()
	var res struct {
		CampaignID   string `json:"campaignId"`
		MessageCount int    `json:"messageCount"`
		Status       string `json:"status"`
	}
	if err := c.Do(ctx, "POST", path, [2]string{"X-API-Key", c.APIKey}, body, http.StatusAccepted, &res); err != nil {
		return "", 0, 0, err
	}
	accepted = time.Since(start)
	for {
		var camp struct {
			Status        string `json:"status"`
			TotalMessages int    `json:"totalMessages"`
			FailureReason string `json:"failureReason"`
		}
		if err := c.API(ctx, "GET", "/campaigns/"+res.CampaignID, nil, http.StatusOK, &camp); err != nil {
			return "", 0, 0, err
		}
		switch camp.Status {
		case "Ready":
			if camp.TotalMessages != res.MessageCount {
				return "", 0, 0, fmt.Errorf("Ready with %d messages, %d accepted", camp.TotalMessages, res.MessageCount)
			}
			return res.CampaignID, accepted, time.Since(start), nil
		case "Failed":
			return "", 0, 0, fmt.Errorf("campaign failed: %s", camp.FailureReason)
		}
		if time.Since(start) > timeout {
			return "", 0, 0, fmt.Errorf("campaign still %s after %v", camp.Status, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// CPUTime returns the CPU time (user and system) process pid has used.
func CPUTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read process stat: %w", err)
	}
	// The fields after the command name (in parentheses, which may hold
	// spaces): utime and stime are the 12th and 13th of those.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("malformed process stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("malformed process stat")
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse process stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc CPU times: 100 on Linux.
const clockTicks = 100

// ErrTimeout is a wait that outlasted its bound.
var ErrTimeout = errors.New("timed out")

// WaitFinal polls campaign id every 20 ms until every message is
// Delivered or Failed, and returns how many are each; past timeout its
// error wraps ErrTimeout.
func (c *Client) WaitFinal(ctx context.Context, id string, timeout time.Duration) (delivered, failed int, err error) {
	deadline := time.Now().Add(timeout)
	for {
		var camp struct {
			TotalMessages  int `json:"totalMessages"`
			DeliveredCount int `json:"deliveredCount"`
			FailedCount    int `json:"failedCount"`
		}
		if err := c.API(ctx, "GET", "/campaigns/"+id, nil, http.StatusOK, &camp); err != nil {
			return 0, 0, err
		}
		if camp.TotalMessages > 0 && camp.DeliveredCount+camp.FailedCount >= camp.TotalMessages {
			return camp.DeliveredCount, camp.FailedCount, nil
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("campaign %s: %d delivered, %d failed of %d: %w", id, camp.DeliveredCount, camp.FailedCount, camp.TotalMessages, ErrTimeout)
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// BuildHerald builds ./cmd/herald (run from the module's root) into dir
// and returns the binary's path; the build's output goes to standard
// error.
func BuildHerald(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "herald")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/herald")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build herald: %w", err)
	}
	return bin, nil
}

// Child is a peer of Herald (an SMSC, a chat provider) in its own
// process, its output read line by line.
type Child struct {
	Cmd   *exec.Cmd
	Stdin io.WriteCloser
	lines chan string // its stdout, line by line
	done  chan struct{}
}

// Start runs cmd, its stderr to the file logPath, and waits until its
// output holds ready.
func (c *Child) Start(cmd *exec.Cmd, logPath, ready string, timeout time.Duration) error {
	c.Cmd, c.lines, c.done = cmd, make(chan string, 64), make(chan struct{})
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if c.Stdin, err = cmd.StdinPipe(); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	go func() {
		defer close(c.done)
		defer logf.Close()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case c.lines <- strings.TrimRight(sc.Text(), "\r\n"):
			default: // nobody waits for this line
			}
		}
		_ = cmd.Wait()
	}()
	if _, err := c.WaitLine(ready, timeout); err != nil {
		c.Stop()
		return fmt.Errorf("did not start: %w", err)
	}
	return nil
}

// Pid is the child's process id.
func (c *Child) Pid() int { return c.Cmd.Process.Pid }

// WaitLine returns the next line of the child's output holding want.
func (c *Child) WaitLine(want string, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case line := <-c.lines:
			if strings.Contains(line, want) {
				return line, nil
			}
		case <-c.done:
			return "", fmt.Errorf("it exited before it printed %q", want)
		case <-t.C:
			return "", fmt.Errorf("waiting for %q: %w", want, ErrTimeout)
		}
	}
}

// Stop stops the child with SIGTERM, kills it after 10 s, and waits for
// it.
func (c *Child) Stop() { terminate(c.Cmd.Process, c.done, 10*time.Second) }
