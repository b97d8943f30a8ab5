package console_test

// The browser tests run herald serve --demo and drive Debian's Chromium
// through the console, as a person would. They run when
// HERALD_TEST_BROWSER=1, and fail when that is set and Chromium is
// missing. HERALD_CONSOLE_BIN names a herald binary to use instead of
// building one; HERALD_CHROMIUM a browser other than /usr/bin/chromium;
// HERALD_CONSOLE_SCREENSHOTS a directory (relative paths are taken from
// the repository root) where the main pages are saved as PNG.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/client"
)

// demo is a running herald serve --demo.
type demo struct {
	base, apiKey, adminToken string
}

// client is a Go client of the demo's API, with its key: the tests set up
// what the pages do not show through it.
func (d *demo) client(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(d.base, d.apiKey)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s", dir)
		}
	}
}

// heraldBinary builds cmd/herald, or takes HERALD_CONSOLE_BIN.
func heraldBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("HERALD_CONSOLE_BIN"); bin != "" {
		return bin
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH to build herald: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "herald")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/herald")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build herald: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var (
	keyLine   = regexp.MustCompile(`API key \(X-API-Key\)\s+(om_[A-Za-z0-9]{32})`)
	tokenLine = regexp.MustCompile(`^\s*admin token\s+([0-9a-f]{32})`)
)

// startDemo runs herald serve --demo in a temporary directory and reads
// the key and token it prints.
func startDemo(t *testing.T, bin string) *demo {
	t.Helper()
	dir := t.TempDir()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.Command(bin, "serve", "--demo")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HERALD_ADDR="+addr, "HERALD_ADMIN_TOKEN=", "HERALD_LOG_LEVEL=warn")
	logf, err := os.Create(filepath.Join(dir, "herald.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	dieWithTest(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil {
				t.Logf("herald log (last 4 KB):\n%s", tail(b, 4096))
			}
		}
	})
	d := &demo{base: "http://" + addr}
	found := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		var key, token string
		for sc.Scan() {
			if sent {
				continue // d is the test's from here on: the output is only drained
			}
			line := sc.Text()
			if m := keyLine.FindStringSubmatch(line); m != nil {
				key = m[1]
			}
			if m := tokenLine.FindStringSubmatch(line); m != nil {
				token = m[1]
			}
			if key != "" && token != "" {
				d.apiKey, d.adminToken = key, token
				sent = true
				found <- nil
			}
		}
		if !sent {
			found <- fmt.Errorf("herald exited without printing its key and token: %v", sc.Err())
		}
	}()
	select {
	case err := <-found:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("herald serve --demo did not print its key and token within 90 s")
	}
	return d
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// status answers the status code of a request, without failing.
func (d *demo) status(method, path string, in any) int {
	b, _ := json.Marshal(in)
	req, err := http.NewRequest(method, d.base+path, bytes.NewReader(b))
	if err != nil {
		return 0
	}
	if strings.HasPrefix(path, "/admin/") {
		req.Header.Set("Authorization", "Bearer "+d.adminToken)
	} else {
		req.Header.Set("X-API-Key", d.apiKey)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// post sends a JSON body without credentials (the demo's handsets) and
// answers the status code.
func (d *demo) post(path string, in any) int {
	b, _ := json.Marshal(in)
	res, err := http.Post(d.base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// get answers the body of a GET with the key or token, failing the test
// on anything but 200.
func (d *demo) get(t *testing.T, path string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, d.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(path, "/admin/") {
		req.Header.Set("Authorization", "Bearer "+d.adminToken)
	} else {
		req.Header.Set("X-API-Key", d.apiKey)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, body)
	}
	return string(body)
}

// browser is one Chromium tab on the console.
type browser struct {
	t     *testing.T
	ctx   context.Context
	d     *demo
	shots string

	mu       sync.Mutex
	problems []string
}

func chromiumPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("HERALD_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("HERALD_TEST_BROWSER is set but Chromium is missing at %s (apt-get install -y chromium): %v", p, err)
	}
	return p
}

func newBrowser(t *testing.T, d *demo) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1280, 900),
		// Nothing but this machine: any other host fails to resolve.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.Flag("lang", "en-GB"),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx, d: d}
	if dir := os.Getenv("HERALD_CONSOLE_SCREENSHOTS"); dir != "" {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(repoRoot(t), dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b.shots = dir
	}
	b.watch()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return b
}

// watch records what must not happen: a script error, a content security
// policy violation, a request answered 404 (a red line in the browser's
// console: the console asks only for what exists), a request to another
// host, the key or token in a URL.
func (b *browser) watch() {
	exceptions := chromedp.Events(b.ctx, runtime.ExceptionThrown)
	logs := chromedp.Events(b.ctx, log.EntryAdded)
	requests := chromedp.Events(b.ctx, network.RequestWillBeSent)
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			msg := ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil && ev.ExceptionDetails.Exception.Description != "" {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
			b.problem("script error: " + msg)
		}
	}()
	go func() {
		for ev, err := range logs {
			if err != nil {
				return
			}
			if strings.Contains(ev.Entry.Text, "Content Security Policy") || strings.Contains(ev.Entry.Text, "Refused to") {
				b.problem("CSP: " + ev.Entry.Text)
			}
			if ev.Entry.Source == log.EntrySourceNetwork && strings.Contains(ev.Entry.Text, "status of 404") {
				b.problem("404 in the browser's console: " + ev.Entry.Text + " " + ev.Entry.URL)
			}
		}
	}()
	go func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			u := ev.Request.URL
			if !strings.HasPrefix(u, b.d.base+"/") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
				b.problem("request to another host: " + u)
			}
			if (b.d.apiKey != "" && strings.Contains(u, b.d.apiKey)) || (b.d.adminToken != "" && strings.Contains(u, b.d.adminToken)) {
				b.problem("secret in a URL: " + u)
			}
		}
	}()
}

func (b *browser) problem(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, s)
}

// checkProblems fails the test for what watch recorded.
func (b *browser) checkProblems() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Error(p)
	}
	b.problems = nil
}

// fail saves a screenshot and the page's text, then stops the test.
func (b *browser) fail(format string, args ...any) {
	b.t.Helper()
	msg := fmt.Sprintf(format, args...)
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		p := filepath.Join(os.TempDir(), "herald-console-failure.png")
		if os.WriteFile(p, png, 0o644) == nil {
			msg += "\nscreenshot: " + p
		}
	}
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err == nil {
		msg += "\nat " + loc
	}
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); err == nil {
		msg += "\npage text:\n" + string(tail([]byte(text), 3000))
	}
	b.mu.Lock()
	for _, p := range b.problems {
		msg += "\n" + p
	}
	b.mu.Unlock()
	b.t.Fatal(msg)
}

func (b *browser) do(what string, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail("%s: %v", what, err)
	}
}

// open goes to a page of the console by its hash.
func (b *browser) open(hash string) {
	b.t.Helper()
	b.do("open "+hash, 10*time.Second, chromedp.Evaluate[chromedp.Void](`location.hash = `+strconv.Quote(hash)))
}

// waitFor waits until the JavaScript expression is truthy.
func (b *browser) waitFor(what, expr string, timeout time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		b.fail("waiting for %s: %v", what, err)
	}
}

// visible waits for a visible element.
func (b *browser) visible(sel string) {
	b.t.Helper()
	b.do("wait for "+sel, 15*time.Second, chromedp.WaitVisible(chromedp.CSS(sel)))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.fail("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func (b *browser) js(expr string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.fail("evaluate %s: %v", expr, err)
	}
	return s
}

func (b *browser) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, 15*time.Second, chromedp.Click(chromedp.CSS(sel)))
}

func (b *browser) typeIn(sel, text string) {
	b.t.Helper()
	b.do("type into "+sel, 15*time.Second, chromedp.WaitVisible(chromedp.CSS(sel)),
		chromedp.Evaluate[chromedp.Void](`(e => { e.value = ''; e.dispatchEvent(new Event('input', {bubbles: true})); })(document.querySelector(`+strconv.Quote(sel)+`))`))
	if text != "" {
		b.do("type into "+sel, 15*time.Second, chromedp.SendKeys(chromedp.CSS(sel), text))
	}
}

// choose picks an option of a select, as a person would.
func (b *browser) choose(sel, value string) {
	b.t.Helper()
	b.do("choose "+value+" in "+sel, 10*time.Second, chromedp.SetValue(chromedp.CSS(sel), value),
		chromedp.Evaluate[chromedp.Void](`document.querySelector(`+strconv.Quote(sel)+`).dispatchEvent(new Event('change', {bubbles: true}))`))
}

// shot saves a full-page screenshot when HERALD_CONSOLE_SCREENSHOTS is set.
func (b *browser) shot(name string) {
	b.t.Helper()
	if b.shots == "" {
		return
	}
	// Let bars and charts settle; passing toasts are no part of the page.
	b.do("settle", 5*time.Second, chromedp.Sleep(700*time.Millisecond),
		chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('#toasts > *').forEach((t) => t.remove())`))
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.fail("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", name)
}

func (b *browser) viewport(w, h int64, mobile bool) {
	b.t.Helper()
	if mobile {
		b.do("viewport", 10*time.Second, chromedp.EmulateViewport(w, h, chromedp.EmulateMobile))
	} else {
		b.do("viewport", 10*time.Second, chromedp.EmulateViewport(w, h))
	}
}

type campaign struct {
	CampaignID     string `json:"campaignId"`
	Status         string `json:"status"`
	DeliveredCount int    `json:"deliveredCount"`
	FailedCount    int    `json:"failedCount"`
	PendingCount   int    `json:"pendingCount"`
}

func (d *demo) waitCampaign(t *testing.T, id string, ok func(campaign) bool) campaign {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := d.client(t).GetCampaign(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		c := campaign{Status: string(got.Status), DeliveredCount: got.DeliveredCount, FailedCount: got.FailedCount, PendingCount: got.PendingCount}
		if ok(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("campaign %s stays %+v", id, c)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestBrowser(t *testing.T) {
	if os.Getenv("HERALD_TEST_BROWSER") != "1" {
		t.Skip("set HERALD_TEST_BROWSER=1 to drive Chromium through the console")
	}
	chromiumPath(t) // fail early and clearly when it is missing
	start := time.Now()
	d := startDemo(t, heraldBinary(t))
	t.Logf("herald ready at %s in %s", d.base, time.Since(start).Round(time.Millisecond))
	b := newBrowser(t, d)
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e6, 10)

	var templateID, bulkID string
	if !t.Run("SignInWithKey", func(t *testing.T) {
		b.t = t
		b.do("open the console", 20*time.Second, chromedp.Navigate(d.base+"/console/"))
		b.visible("#signin-key")
		// A wrong key is refused next to its field.
		b.typeIn("#signin-key", "om_00000000000000000000000000000000")
		b.click("#signin-key-submit")
		b.waitFor("the wrong key's error", `document.querySelector('[data-field="apiKey"].has-error .field-error')?.textContent.includes('unknown')`, 10*time.Second)
		b.typeIn("#signin-key", d.apiKey)
		b.click("#signin-key-submit")
		b.waitFor("the campaigns page", `document.querySelector('h1')?.textContent === 'Campaigns'`, 10*time.Second)
		if who := b.text("#identity"); who != "Herald Demo" {
			t.Errorf("identity %q, want Herald Demo", who)
		}
		if got := b.js(`sessionStorage.getItem('herald.console.session') || ''`); !strings.Contains(got, d.apiKey) {
			t.Errorf("the key is not in sessionStorage")
		}
		if loc := b.js(`location.href`); strings.Contains(loc, d.apiKey) {
			t.Errorf("the key is in the URL: %s", loc)
		}
		b.checkProblems()
	}) {
		return
	}

	if !t.Run("SMSTemplateWithPreview", func(t *testing.T) {
		b.t = t
		b.click(`.mainnav a[href="#/templates"]`)
		b.visible("#new-sms-template")
		b.click("#new-sms-template")
		b.visible("#tpl-name")
		b.typeIn("#tpl-name", "spring-sale-"+suffix)
		b.typeIn("#tpl-content", "Hi {{name}}, 20% off everything until Sunday")
		b.waitFor("the preview's answer", `['ready', 'unavailable', 'error'].includes(document.querySelector('#sms-preview')?.dataset.state)`, 10*time.Second)
		switch state := b.js(`document.querySelector('#sms-preview').dataset.state`); state {
		case "ready":
			if enc := b.text("#sms-preview-encoding dd"); enc != "GSM-7" {
				t.Errorf("encoding %q, want GSM-7", enc)
			}
			if seg := b.text("#sms-preview-segments dd"); seg != "1" {
				t.Errorf("segments %q, want 1", seg)
			}
			// A sample value is rendered by the server.
			b.visible(`#sms-preview-samples input[data-placeholder="name"]`)
			b.typeIn(`#sms-preview-samples input[data-placeholder="name"]`, "Ada")
			b.waitFor("the rendered sample", `document.querySelector('#sms-preview-text')?.textContent.startsWith('Hi Ada,')`, 10*time.Second)
			// A character outside GSM-7 makes it UCS-2.
			b.do("type an emoji", 10*time.Second, chromedp.SendKeys(chromedp.CSS("#tpl-content"), " ☀"))
			b.waitFor("UCS-2", `document.querySelector('#sms-preview-encoding dd')?.textContent === 'UCS-2'`, 10*time.Second)
			b.do("remove it", 10*time.Second, chromedp.SendKeys(chromedp.CSS("#tpl-content"), "\b\b"))
			b.waitFor("GSM-7 again", `document.querySelector('#sms-preview-encoding dd')?.textContent === 'GSM-7'`, 10*time.Second)
		case "unavailable":
			t.Log("POST /api/v1/templates/preview is not on this server (404/405): the preview shows as unavailable; its encoding and segments were not checked")
			if !strings.Contains(b.text("#sms-preview-status"), "Preview unavailable") {
				t.Errorf("the unavailable preview does not say so")
			}
		default:
			b.fail("the preview answered an error: %s", b.text("#sms-preview-status"))
		}
		b.shot("template-editor.png")
		b.click("#template-save")
		b.waitFor("the saved template", `/^#\/templates\/[0-9a-f-]{36}$/.test(location.hash) && document.querySelector('#flash')`, 10*time.Second)
		templateID = strings.TrimPrefix(b.js(`location.hash`), "#/templates/")
		// The same name again is refused next to the name field.
		b.open("#/templates/new/sms")
		b.visible("#tpl-name")
		b.typeIn("#tpl-name", "spring-sale-"+suffix)
		b.typeIn("#tpl-content", "Again")
		b.click("#template-save")
		b.waitFor("the name's error", `document.querySelector('[data-field="name"].has-error .field-error')?.textContent.includes('unique')`, 10*time.Second)
		// Another name saves it; the list deletes it after asking.
		b.typeIn("#tpl-name", "draft-"+suffix)
		b.click("#template-save")
		b.waitFor("the draft", `/^#\/templates\/[0-9a-f-]{36}$/.test(location.hash)`, 10*time.Second)
		draftID := strings.TrimPrefix(b.js(`location.hash`), "#/templates/")
		b.click(`.mainnav a[href="#/templates"]`)
		b.visible(`tr[data-template-id="` + draftID + `"] button`)
		b.click(`tr[data-template-id="` + draftID + `"] button`)
		b.visible("dialog[open] #confirm-ok")
		b.click("dialog[open] #confirm-ok")
		b.waitFor("the draft gone", `!document.querySelector('tr[data-template-id="`+draftID+`"]') && document.querySelector('tr[data-template-id="`+templateID+`"]')`, 10*time.Second)
		if code := d.status(http.MethodGet, "/api/v1/templates/"+draftID, nil); code != http.StatusNotFound {
			t.Errorf("the deleted template answers %d", code)
		}
		b.checkProblems()
	}) {
		return
	}

	if !t.Run("WhatsAppProviderTemplate", func(t *testing.T) {
		b.t = t
		hc := d.client(t)
		services, err := hc.ListChatServices(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var wa, viber int64
		for _, s := range services {
			switch {
			case s.Channel == "whatsapp" && wa == 0:
				wa = s.ID
			case s.Channel == "viber" && viber == 0:
				viber = s.ID
			}
		}
		if wa == 0 || viber == 0 {
			t.Fatalf("the demo has no WhatsApp or no Viber service: %+v", services)
		}
		b.open("#/templates/new/chat")
		b.visible("#tpl-name")
		b.typeIn("#tpl-name", "order-shipped-"+suffix)
		b.typeIn("#tpl-content", "Your order {{order}} has shipped")
		// A Viber service has no WhatsApp template fields.
		b.choose("#tpl-service", strconv.FormatInt(viber, 10))
		if b.js(`String(!!document.querySelector('#tpl-pt-name'))`) != "false" {
			t.Errorf("the WhatsApp template fields show for a Viber service")
		}
		b.choose("#tpl-service", strconv.FormatInt(wa, 10))
		b.visible("#tpl-pt-name")
		b.typeIn("#tpl-pt-name", "order_shipped")
		b.typeIn("#tpl-pt-language", "English")
		b.click("#tpl-pt-add")
		b.click("#tpl-pt-add")
		b.typeIn("#tpl-pt-param-1", "{{name}}")
		b.typeIn("#tpl-pt-param-2", "{{order}}")
		// The parameters' placeholders get sample values too.
		b.visible(`#chat-samples input[data-placeholder="name"]`)
		// The server's error lands under the language.
		b.click("#template-save")
		b.waitFor("the language's error", `document.querySelector('[data-field="typeSpecificConfig.providerTemplate.language"].has-error .field-error')?.textContent.includes('en_US')`, 10*time.Second)
		b.typeIn("#tpl-pt-language", "en_US")
		b.click("#template-save")
		b.waitFor("the saved template", `/^#\/templates\/[0-9a-f-]{36}$/.test(location.hash) && document.querySelector('#flash')`, 10*time.Second)
		id := strings.TrimPrefix(b.js(`location.hash`), "#/templates/")
		saved, err := hc.GetTemplate(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if c := saved.TypeSpecificConfig; c == nil || c.ProviderTemplate == nil || c.ProviderTemplate.Name != "order_shipped" ||
			c.ProviderTemplate.Language != "en_US" || strings.Join(c.ProviderTemplate.Parameters, ",") != "{{name}},{{order}}" {
			t.Fatalf("saved config %+v", saved.TypeSpecificConfig)
		}
		// The editor shows the saved template's fields; removing a
		// parameter saves through PUT.
		b.visible("#tpl-pt-param-2")
		if got := b.js(`document.querySelector('#tpl-pt-param-2').value`); got != "{{order}}" {
			t.Errorf("parameter 2 shows %q", got)
		}
		b.shot("whatsapp-template.png")
		b.click(`button[aria-label="Remove parameter 1"]`)
		b.click("#template-save")
		b.waitFor("the saved template", `document.querySelector('#flash')?.textContent.includes('saved')`, 10*time.Second)
		saved, err = hc.GetTemplate(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if got := saved.TypeSpecificConfig.ProviderTemplate.Parameters; strings.Join(got, ",") != "{{order}}" {
			t.Errorf("parameters after the removal %q", got)
		}
		b.checkProblems()
	}) {
		return
	}

	if !t.Run("BulkFromCSV", func(t *testing.T) {
		b.t = t
		csv := filepath.Join(t.TempDir(), "recipients.csv")
		data := "phoneNumber,externalUserId,name\n" +
			"+447700900001,crm-1,Ann\n" +
			"+447700900002,crm-2,\n" +
			"+447700900123,crm-123,Ada\n" +
			"12-34,crm-bad,Bad\n" +
			",crm-none,Nobody\n" +
			"+44 7700 900456,crm-456,\"Smith, Jo\"\n" +
			"+447700900789,,Bob\n"
		if err := os.WriteFile(csv, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		b.click(`.mainnav a[href="#/campaigns/new"]`)
		b.visible("#bulk-template")
		b.choose("#bulk-template", templateID)
		b.waitFor("the template's placeholders", `document.querySelector('#template-info')?.textContent.includes('name')`, 5*time.Second)
		b.do("upload the CSV", 10*time.Second, chromedp.SetUploadFiles(chromedp.CSS("#bulk-file"), []string{csv}))
		b.waitFor("the invalid rows", `document.querySelectorAll('#invalid-table tbody tr').length === 2`, 10*time.Second)
		if v, i := b.text("#csv-valid"), b.text("#csv-invalid"); v != "5" || i != "2" {
			t.Errorf("valid %s, invalid %s; want 5 and 2", v, i)
		}
		if rows := b.text("#invalid-table"); !strings.Contains(rows, "12-34") || !strings.Contains(rows, "missing") {
			t.Errorf("invalid rows: %s", rows)
		}
		// The row without a name is told before sending, with its count,
		// and can be left out.
		b.visible("#missing-placeholders")
		if n := b.js(`document.querySelector('#missing-placeholders li[data-placeholder="name"]')?.dataset.rows || ''`); n != "1" {
			t.Errorf("rows without {{name}}: %q, want 1", n)
		}
		if w := b.text("#missing-placeholders"); !strings.Contains(w, "{{name}}: 1 row without a value") || !strings.Contains(w, "as written") {
			t.Errorf("missing placeholders warning: %s", w)
		}
		b.click("#bulk-skip-missing")
		b.waitFor("one row fewer to send", `document.querySelector('#csv-valid')?.textContent === '4' && document.querySelector('#missing-placeholders')?.textContent.includes('left out')`, 5*time.Second)
		b.click("#bulk-skip-missing")
		b.waitFor("every row again", `document.querySelector('#csv-valid')?.textContent === '5'`, 5*time.Second)
		b.shot("csv-upload.png")
		b.click("#bulk-send")
		b.waitFor("the campaign page", `/^#\/campaigns\/[0-9a-f-]{36}$/.test(location.hash)`, 15*time.Second)
		bulkID = strings.TrimPrefix(b.js(`location.hash`), "#/campaigns/")
		if f := b.text("#flash"); !strings.Contains(f, "5 messages") || !strings.Contains(f, "2 invalid rows") || !strings.Contains(f, "1 without {{name}}") {
			t.Errorf("flash %q", f)
		}
		b.visible("#action-start")
		b.click("#action-start")
		b.waitFor("Completed", `document.querySelector('#campaign-status .badge')?.dataset.status === 'Completed' && document.querySelector('#count-pending dd')?.textContent === '0'`, 30*time.Second)
		if dlv, fl := b.text("#count-delivered dd"), b.text("#count-failed dd"); dlv != "3" || fl != "2" {
			t.Errorf("delivered %s, failed %s; want 3 and 2", dlv, fl)
		}
		b.waitFor("the delivery chart", `document.querySelectorAll('#delivery-chart svg rect.bar').length > 0`, 15*time.Second)
		b.waitFor("the latest messages", `document.querySelectorAll('#campaign-messages tbody tr').length === 5`, 10*time.Second)
		b.shot("campaign.png")
		// A page load of the campaign's own address keeps the session.
		b.do("load the campaign's address", 20*time.Second, chromedp.Navigate(d.base+"/console/campaigns/"+bulkID))
		b.waitFor("the campaign page again", `location.hash === '#/campaigns/`+bulkID+`' && document.querySelector('#campaign-status .badge')?.dataset.status === 'Completed'`, 10*time.Second)
		c := d.waitCampaign(t, bulkID, func(campaign) bool { return true })
		if c.Status != "Completed" || c.DeliveredCount != 3 || c.FailedCount != 2 {
			t.Errorf("campaign %+v", c)
		}
		b.checkProblems()
	}) {
		return
	}

	if !t.Run("PauseResumeCancel", func(t *testing.T) {
		b.t = t
		// A campaign whose send window opens in two hours: its messages wait.
		from := time.Now().UTC().Add(2 * time.Hour)
		to := from.Add(time.Hour)
		r, err := d.client(t).SendSMSPromotional(t.Context(), client.BulkSend{
			TemplateID: templateID, Placeholders: map[string]string{"name": "friend"},
			Recipients: []client.Recipient{{PhoneNumber: "+447700900601"}, {PhoneNumber: "+447700900602"}},
			SendWindow: &client.SendWindow{From: from.Format("15") + ":00", To: to.Format("15") + ":00", TimeZone: "UTC"},
		})
		if err != nil {
			t.Fatal(err)
		}
		d.waitCampaign(t, r.CampaignID, func(c campaign) bool { return c.Status == "Ready" })
		if _, err := d.client(t).StartCampaign(t.Context(), r.CampaignID); err != nil {
			t.Fatal(err)
		}
		// The list shows it in progress, with its bar, and keeps asking.
		b.open("#/campaigns")
		b.waitFor("the live campaign", `document.querySelector('tr[data-campaign-id="`+r.CampaignID+`"]')?.dataset.status === 'InProgress'`, 10*time.Second)
		b.waitFor("the completed one", `document.querySelector('tr[data-campaign-id="`+bulkID+`"] .progress')?.getAttribute('aria-valuenow') === '100'`, 10*time.Second)
		if !strings.Contains(b.text("#live-note"), "every 2 seconds") {
			t.Errorf("the list does not say it refreshes")
		}
		b.open("#/campaigns/" + r.CampaignID)
		b.visible("#action-pause")
		b.click("#action-pause")
		b.waitFor("Paused", `document.querySelector('#campaign-status .badge')?.dataset.status === 'Paused'`, 10*time.Second)
		b.click("#action-resume")
		b.waitFor("InProgress", `document.querySelector('#campaign-status .badge')?.dataset.status === 'InProgress'`, 10*time.Second)
		// Cancel asks first; keeping it changes nothing.
		b.click("#action-cancel")
		b.visible("dialog[open] #confirm-cancel")
		b.click("dialog[open] #confirm-cancel")
		b.waitFor("the dialog to close", `!document.querySelector('dialog[open]')`, 5*time.Second)
		if d.waitCampaign(t, r.CampaignID, func(campaign) bool { return true }).Status != "InProgress" {
			t.Errorf("keeping the campaign changed it")
		}
		b.click("#action-cancel")
		b.visible("dialog[open] #confirm-ok")
		b.click("dialog[open] #confirm-ok")
		// Cancelled, not Completed: its own badge, and a bar of what was
		// cancelled rather than a full green one.
		b.waitFor("the cancelled campaign", `document.querySelector('#campaign-status .badge')?.dataset.status === 'Cancelled' && document.querySelector('#count-failed dd')?.textContent.startsWith('2')`, 10*time.Second)
		if label := b.text("#campaign-status .badge"); label != "Cancelled" {
			t.Errorf("badge %q, want Cancelled", label)
		}
		b.waitFor("the cancelled part of the bar", `document.querySelector('.progress.progress-cancelled [data-part="cancelled"]')?.dataset.value === '2'`, 15*time.Second)
		if green := b.js(`String(document.querySelectorAll('.progress-done, .progress.progress-cancelled [data-part="delivered"]').length)`); green != "0" {
			t.Errorf("the cancelled campaign shows %s green bars", green)
		}
		if note := b.text("#count-failed"); !strings.Contains(note, "2 cancelled") {
			t.Errorf("failed counter: %q", note)
		}
		b.open("#/campaigns")
		row := `tr[data-campaign-id="` + r.CampaignID + `"]`
		b.waitFor("the cancelled campaign in the list", `document.querySelector('`+row+` .badge')?.dataset.status === 'Cancelled'`, 10*time.Second)
		if label := b.text(row + " .badge"); label != "Cancelled" {
			t.Errorf("list badge %q, want Cancelled", label)
		}
		if b.js(`String(!!document.querySelector('`+row+` .progress-cancelled [data-part="cancelled"]') && !document.querySelector('`+row+` .progress-done'))`) != "true" {
			t.Errorf("the list shows the cancelled campaign's bar as done")
		}
		b.shot("campaigns.png")
		b.checkProblems()
	}) {
		return
	}

	if !t.Run("MessageSearch", func(t *testing.T) {
		b.t = t
		b.click(`.mainnav a[href="#/messages"]`)
		b.visible("#q-phone")
		b.click("#search-submit")
		b.waitFor("the missing criteria error", `document.querySelector('[data-field="phoneNumber"].has-error')`, 5*time.Second)
		b.typeIn("#q-phone", "447700900001")
		b.click("#search-submit")
		b.waitFor("the results", `document.querySelector('#messages-table')?.textContent.includes('UNDELIVERED')`, 10*time.Second)
		b.typeIn("#q-phone", "")
		b.typeIn("#q-external", "crm-456")
		b.click("#search-submit")
		b.waitFor("the external id's message", `document.querySelector('#messages-table')?.textContent.includes('Smith, Jo')`, 10*time.Second)
		b.open("#/messages?campaignId=" + bulkID)
		b.waitFor("the campaign's messages", `document.querySelectorAll('#messages-table tbody tr').length === 5`, 10*time.Second)
		b.shot("messages.png")
		b.checkProblems()
	}) {
		return
	}

	if !t.Run("InboundOptOutsWebhooks", func(t *testing.T) {
		b.t = t
		// An endpoint on this machine (the demo allows loopback http)
		// answers 200 after a short wait, so the log has a latency.
		var hits atomic.Int32
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			time.Sleep(15 * time.Millisecond)
			w.WriteHeader(http.StatusOK)
		}))
		defer recv.Close()
		b.click(`.mainnav a[href="#/webhooks"]`)
		b.visible("#hook-url")
		// A URL that is not one is refused next to its field.
		b.typeIn("#hook-url", "not a url")
		b.click("#hook-register")
		b.waitFor("the url's error", `document.querySelector('[data-field="url"].has-error')`, 10*time.Second)
		b.typeIn("#hook-url", recv.URL+"/herald")
		b.click("#hook-ev-message-inbound")
		b.click("#hook-ev-optout-changed")
		b.click("#hook-batch")
		b.typeIn("#hook-max-events", "5000")
		b.click("#hook-register")
		b.waitFor("the batch size's error", `document.querySelector('[data-field="batch.maxEvents"].has-error')`, 10*time.Second)
		b.typeIn("#hook-max-events", "10")
		b.typeIn("#hook-max-wait", "200")
		b.click("#hook-register")
		b.waitFor("the secret shown once", `/^whsec_/.test(document.querySelector('#new-secret-value')?.textContent || '')`, 10*time.Second)
		secret := b.text("#new-secret-value")
		b.waitFor("the endpoint listed", `document.querySelectorAll('#hooks-table tbody tr').length === 1`, 10*time.Second)
		if got := b.text("#hooks-table tbody tr"); !strings.Contains(got, "Up to 10 events") || !strings.Contains(got, "message.inbound") {
			t.Errorf("endpoint row: %q", got)
		}
		hookID := b.js(`document.querySelector('#hooks-table tbody tr').dataset.webhookId`)
		// Rotating shows a new secret, once.
		b.click(`button[data-rotate="` + hookID + `"]`)
		b.visible("dialog[open] #confirm-ok")
		b.click("dialog[open] #confirm-ok")
		b.waitFor("the new secret", `/^whsec_/.test(document.querySelector('#new-secret-value')?.textContent || '') && document.querySelector('#new-secret-value').textContent !== `+strconv.Quote(secret), 10*time.Second)
		rotated := b.text("#new-secret-value")
		b.open("#/templates")
		b.open("#/webhooks")
		b.waitFor("the list again", `document.querySelector('#hooks-table') && !document.querySelector('#new-secret-value')`, 10*time.Second)
		if b.js(`document.documentElement.outerHTML.includes(`+strconv.Quote(rotated)+`) || document.documentElement.outerHTML.includes(`+strconv.Quote(secret)+`) ? 'shown' : ''`) != "" {
			t.Errorf("the list shows a secret again")
		}
		b.shot("webhooks.png")

		// Three SMS from handsets: one of them STOP, which opts its sender out.
		for i, text := range []string{"Hello there", "What time do you open?", "STOP"} {
			from := fmt.Sprintf("4477009002%02d", i)
			if code := d.post("/demo/smsc/mo", map[string]string{"from": from, "to": "Herald", "text": text}); code/100 != 2 {
				t.Fatalf("send MO: %d", code)
			}
		}
		b.click(`.mainnav a[href="#/inbound"]`)
		b.waitFor("three inbound SMS", `document.querySelectorAll('#inbound-table tbody tr').length >= 3`, 20*time.Second)
		if got := b.text("#inbound-table"); !strings.Contains(got, "What time do you open?") {
			t.Errorf("inbound table: %q", got)
		}
		b.typeIn("#inbound-phone", "447700900201")
		b.click("#inbound-submit")
		b.waitFor("one number's SMS", `document.querySelectorAll('#inbound-table tbody tr').length === 1 && document.querySelector('#inbound-table').textContent.includes('What time')`, 10*time.Second)
		// Paging: more SMS than a page.
		for i := 0; i < 25; i++ {
			if code := d.post("/demo/smsc/mo", map[string]string{"from": "447700900299", "to": "Herald", "text": fmt.Sprintf("note %d", i)}); code/100 != 2 {
				t.Fatalf("send MO: %d", code)
			}
		}
		var page struct {
			TotalCount int `json:"totalCount"`
		}
		for deadline := time.Now().Add(20 * time.Second); page.TotalCount < 25 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if err := json.Unmarshal([]byte(d.get(t, "/api/v1/inbound?phoneNumber=447700900299")), &page); err != nil {
				t.Fatal(err)
			}
		}
		if page.TotalCount <= 20 || page.TotalCount > 40 {
			t.Fatalf("%d inbound SMS stored of 25", page.TotalCount)
		}
		b.open("#/inbound?phoneNumber=447700900299")
		b.waitFor("a full first page", `document.querySelectorAll('#inbound-table tbody tr').length === 20 && document.querySelector('.pager a[rel="next"]')`, 20*time.Second)
		b.click(`.pager a[rel="next"]`)
		b.waitFor("the second page", `document.querySelectorAll('#inbound-table tbody tr').length > 0 && document.querySelector('.pager-info')?.textContent.includes('Page 2 of 2')`, 10*time.Second)
		if err := json.Unmarshal([]byte(d.get(t, "/api/v1/inbound?phoneNumber=447700900299&page=2")), &page); err != nil {
			t.Fatal(err)
		}
		if got := b.js(`String(document.querySelectorAll('#inbound-table tbody tr').length)`); got != strconv.Itoa(page.TotalCount-20) {
			t.Errorf("the second page shows %s SMS of %d", got, page.TotalCount)
		}
		b.open("#/inbound")
		b.visible("#inbound-table")
		b.shot("inbound.png")

		// Opt-outs: the STOP is listed with its source; one is added and
		// removed by hand; the keywords are saved.
		b.click(`.mainnav a[href="#/opt-outs"]`)
		b.waitFor("the keyword opt-out", `document.querySelector('#optouts-table')?.textContent.includes('SMS keyword')`, 10*time.Second)
		b.typeIn("#optout-phone", "+447700900333")
		b.choose("#optout-channel", "Chat")
		b.click("#optout-add")
		b.waitFor("the added number", `document.querySelector('#optouts-table tr[data-phone="447700900333"]')?.textContent.includes('Chat only')`, 10*time.Second)
		b.typeIn("#optout-phone", "12")
		b.click("#optout-add")
		b.waitFor("the bad number's error", `document.querySelector('[data-field="phoneNumber"].has-error')`, 10*time.Second)
		b.typeIn("#kw-optout", "STOP ARRET")
		b.click("#kw-save")
		// The save's answer: the toast, and the button enabled again.
		b.waitFor("the keywords saved", `[...document.querySelectorAll('#toasts .toast')].some((t) => t.textContent.includes('Keywords saved')) && `+
			`!document.querySelector('#kw-save').disabled && document.querySelector('#kw-optout').value === 'STOP ARRET'`, 10*time.Second)
		kw := d.get(t, "/api/v1/opt-outs/keywords")
		if !strings.Contains(kw, `"ARRET"`) {
			t.Errorf("keywords after the save: %s", kw)
		}
		b.shot("opt-outs.png")
		b.click(`#optouts-table tr[data-phone="447700900333"] button`)
		b.visible("dialog[open] #confirm-ok")
		b.click("dialog[open] #confirm-ok")
		b.waitFor("the number removed", `document.querySelector('#optouts-table') && !document.querySelector('#optouts-table tr[data-phone="447700900333"]')`, 10*time.Second)
		if code := d.status(http.MethodDelete, "/api/v1/opt-outs/447700900333?channel=Chat", nil); code != http.StatusNotFound {
			t.Errorf("the removed opt-out answers %d to a second DELETE", code)
		}

		// The delivery log: the inbound SMS and opt-out events, with their
		// status code and latency; one sent again.
		b.open("#/webhooks/" + hookID)
		b.waitFor("delivered events", `[...document.querySelectorAll('#deliveries-table [data-status="Delivered"]')].length >= 3`, 30*time.Second)
		delivered := `document.querySelector('#deliveries-table [data-status="Delivered"]').closest('tr')`
		if got := b.js(delivered + `.innerText`); !strings.Contains(got, "200") || !strings.Contains(got, " ms") {
			t.Errorf("delivery row: %q", got)
		}
		before := hits.Load()
		first := b.js(delivered + `.dataset.eventId`)
		b.click(`button[data-redeliver="` + first + `"]`)
		deadline := time.Now().Add(20 * time.Second)
		for hits.Load() == before && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if hits.Load() == before {
			t.Errorf("redeliver sent nothing")
		}
		// The log shows the second attempt once refreshed.
		attempts := `(() => { const r = document.querySelector('#deliveries-table tr[data-event-id="` + first + `"]'); return r && r.querySelector('[data-status="Delivered"]') ? r.children[2].textContent : ''; })()`
		for deadline := time.Now().Add(20 * time.Second); b.js(attempts) < "2" && time.Now().Before(deadline); {
			time.Sleep(500 * time.Millisecond)
			b.click("#deliveries-refresh")
			b.visible("#deliveries-table")
		}
		if got := b.js(attempts); got < "2" {
			t.Errorf("attempts after the redelivery: %q", got)
		}
		b.shot("webhook-deliveries.png")
		// Removing the endpoint.
		b.open("#/webhooks")
		b.visible(`button[data-remove="` + hookID + `"]`)
		b.click(`button[data-remove="` + hookID + `"]`)
		b.visible("dialog[open] #confirm-ok")
		b.click("dialog[open] #confirm-ok")
		b.waitFor("no endpoint", `!document.querySelector('#hooks-table')`, 10*time.Second)
		if code := d.status(http.MethodGet, "/api/v1/webhooks/"+hookID, nil); code != http.StatusNotFound {
			t.Errorf("the removed endpoint answers %d", code)
		}
		b.checkProblems()
	}) {
		return
	}

	if !t.Run("CompanyOverview", func(t *testing.T) {
		b.t = t
		// A campaign of three SMS the demo's SMSC fails: two UNDELIVERED,
		// one EXPIRED.
		hc := d.client(t)
		failing, err := hc.SendSMSPromotional(t.Context(), client.BulkSend{
			TemplateID: templateID, Placeholders: map[string]string{"name": "friend"},
			Recipients: []client.Recipient{{PhoneNumber: "+447700950001"}, {PhoneNumber: "+447700960001"}, {PhoneNumber: "+447700950002"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		d.waitCampaign(t, failing.CampaignID, func(c campaign) bool { return c.Status == "Ready" })
		if _, err := hc.StartCampaign(t.Context(), failing.CampaignID); err != nil {
			t.Fatal(err)
		}
		d.waitCampaign(t, failing.CampaignID, func(c campaign) bool { return c.FailedCount == 3 })
		b.click(`.mainnav a[href="#/overview"]`)
		b.visible("#overview-counters")
		// The page shows GET /api/v1/summary since local midnight, direct
		// sends included. The numbers are those of the API, the messages
		// settled meanwhile aside: the demo's SMSC has answered the
		// campaign above, and nothing else is sent meanwhile.
		midnight := b.js(`(() => { const d = new Date(); d.setHours(0, 0, 0, 0); return d.toISOString(); })()`)
		sum := summaryOf(t, d.get(t, "/api/v1/summary?since="+url.QueryEscape(midnight)))
		total, failed := sum.Total, sum.ByStatus["Failed"]
		if total == 0 {
			t.Fatal("no message today: the earlier steps sent some")
		}
		b.waitFor("the totals", `document.querySelector('#ov-total dd')?.textContent.replace(/\D/g, '') === '`+strconv.Itoa(total)+`'`, 10*time.Second)
		if got := digits(b.text("#ov-failed dd")); got != strconv.Itoa(failed) {
			t.Errorf("failed %s, want %d", got, failed)
		}
		if got, want := digits(b.text("#ov-delivered dd")), sum.ByStatus["Delivered"]+sum.ByStatus["Seen"]; !strings.HasPrefix(got, strconv.Itoa(want)) {
			t.Errorf("delivered %s, want %d", got, want)
		}
		if b.text("#overview-scope") == "" || strings.Contains(b.text("#overview-scope"), "not counted") {
			t.Errorf("scope %q", b.text("#overview-scope"))
		}
		if b.js(`String(document.querySelectorAll('#overview-table tbody tr').length)`) == "0" {
			t.Errorf("no channel rows")
		}
		// Failures by reason: the SMS above among them, and every failed
		// message of today counted once.
		count := func(reason string) string {
			return b.js(`String([...document.querySelectorAll('#failures-table tbody tr')].filter((r) => r.dataset.reason === ` +
				strconv.Quote(reason) + `).reduce((n, r) => n + Number(r.children[2].textContent.replace(/\D/g, '')), 0))`)
		}
		b.waitFor("the failures table", `document.querySelector('#failures-table')`, 10*time.Second)
		if n, _ := strconv.Atoi(count("UNDELIVERED")); n < 2 {
			t.Errorf("%d UNDELIVERED failures, want at least 2", n)
		}
		if n, _ := strconv.Atoi(count("EXPIRED")); n < 1 {
			t.Errorf("%d EXPIRED failures, want at least 1", n)
		}
		fsum := b.js(`String([...document.querySelectorAll('#failures-table tbody tr')].reduce((n, r) => n + Number(r.children[2].textContent.replace(/\D/g, '')), 0))`)
		if fsum != strconv.Itoa(failed) {
			t.Errorf("the failures by reason add up to %s, want %d", fsum, failed)
		}
		b.shot("overview.png")
		b.checkProblems()
	}) {
		return
	}

	if !t.Run("SurveyChart", func(t *testing.T) {
		b.t = t
		hc := d.client(t)
		tpl, err := hc.CreateChatTemplate(t.Context(), client.ChatTemplateInput{
			Name: "feedback-" + suffix, MessageType: client.TypeSurvey, TemplateContent: "How was your visit, {{name}}?", ChatServiceID: 1,
			TypeSpecificConfig: &client.ChatConfig{Options: []client.SurveyOption{
				{OptionText: "Great", OptionValue: "great"}, {OptionText: "Fine", OptionValue: "fine"}, {OptionText: "Poor", OptionValue: "poor"}}},
			SMSFallbackEnabled: true, SMSFallbackTemplateContent: "How was your visit, {{name}}? Reply GREAT, FINE or POOR", SMSFallbackSenderID: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		r, err := hc.SendChatBulk(t.Context(), client.BulkSend{
			TemplateID: tpl.ID, Placeholders: map[string]string{"name": "friend"},
			Recipients: []client.Recipient{{PhoneNumber: "+447700900004"}, {PhoneNumber: "+447700900005"},
				{PhoneNumber: "+447700900007", Placeholders: map[string]string{"name": "Ada"}}, {PhoneNumber: "+447700900009"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		d.waitCampaign(t, r.CampaignID, func(c campaign) bool { return c.Status == "Ready" })
		b.open("#/campaigns/" + r.CampaignID)
		b.visible("#action-start")
		b.click("#action-start")
		b.waitFor("three answers", `document.querySelector('#survey-total dd')?.textContent === '3'`, 30*time.Second)
		b.waitFor("the survey chart", `document.querySelectorAll('#survey-chart svg rect.bar').length === 3`, 10*time.Second)
		if got := b.text("#survey-chart"); !strings.Contains(got, "Fine") || !strings.Contains(got, "66.7%") {
			t.Errorf("survey chart: %s", got)
		}
		b.waitFor("the chat counters", `document.querySelector('#count-fallback dd')?.textContent.startsWith('1') && document.querySelector('#count-rate dd')?.textContent.startsWith('100%')`, 20*time.Second)
		// The chart counts as the counters do: chat deliveries apart from
		// the fallback SMS, each series labelled.
		final, err := hc.GetCampaign(t.Context(), r.CampaignID)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"delivered":%d,"failed":%d,"fallbackDelivered":%d}`, final.DeliveredCount, final.FailedCount, final.SMSFallbackDeliveredCount)
		b.waitFor("the chart's totals", `(() => { const d = document.querySelector('#delivery-chart figure')?.dataset.totals; if (!d) return false; const x = JSON.parse(d);
			return JSON.stringify({delivered: x.delivered, failed: x.failed, fallbackDelivered: x.fallbackDelivered}) === `+strconv.Quote(want)+`; })()`, 20*time.Second)
		if got, counter := b.js(`String(JSON.parse(document.querySelector('#delivery-chart figure').dataset.totals).delivered)`), b.text("#count-delivered dd"); !strings.HasPrefix(counter, got) {
			t.Errorf("chart delivered %s, counter %q", got, counter)
		}
		if legend := b.text("#delivery-chart .legend"); !strings.Contains(legend, "SMS fallback delivered") {
			t.Errorf("chart legend: %q", legend)
		}
		b.shot("survey.png")
		// The chat template's preview, drawn in the browser.
		b.open("#/templates/" + tpl.ID)
		b.waitFor("the survey bubble", `document.querySelectorAll('#chat-preview-screen [data-type="survey"] .chat-option').length === 3`, 10*time.Second)
		b.typeIn(`#chat-samples input[data-placeholder="name"]`, "Ada")
		b.waitFor("the sample value", `document.querySelector('#chat-preview-screen')?.textContent.includes('How was your visit, Ada?')`, 5*time.Second)
		b.shot("chat-template.png")
		// Editing saves through PUT.
		b.typeIn("#tpl-description", "After each visit")
		b.click("#template-save")
		b.waitFor("the saved template", `document.querySelector('#flash')?.textContent.includes('saved')`, 10*time.Second)
		saved, err := hc.GetTemplate(t.Context(), tpl.ID)
		if err != nil {
			t.Fatal(err)
		}
		if saved.Description != "After each visit" {
			t.Errorf("description %q after the edit", saved.Description)
		}
		b.checkProblems()
	}) {
		return
	}

	if !t.Run("Mobile", func(t *testing.T) {
		b.t = t
		b.viewport(390, 844, true)
		b.open("#/campaigns/" + bulkID)
		b.waitFor("the chart", `document.querySelectorAll('#delivery-chart svg rect.bar').length > 0`, 15*time.Second)
		if overflow := b.js(`String(document.documentElement.scrollWidth > 391)`); overflow != "false" {
			t.Errorf("the campaign page is wider than 390 px: %s px", b.js(`String(document.documentElement.scrollWidth)`))
		}
		b.shot("campaign-mobile.png")
		b.open("#/campaigns")
		b.visible("#campaigns-table")
		if overflow := b.js(`String(document.documentElement.scrollWidth > 391)`); overflow != "false" {
			t.Errorf("the campaigns page is wider than 390 px")
		}
		for _, page := range []struct{ hash, sel string }{{"#/overview", "#overview-counters"}, {"#/opt-outs", "#keywords-form"}, {"#/webhooks", "#hook-form"}, {"#/inbound", "#inbound-search"}} {
			b.open(page.hash)
			b.visible(page.sel)
			if overflow := b.js(`String(document.documentElement.scrollWidth > 391)`); overflow != "false" {
				t.Errorf("%s is wider than 390 px: %s px", page.hash, b.js(`String(document.documentElement.scrollWidth)`))
			}
		}
		b.viewport(1280, 900, false)
		b.checkProblems()
	}) {
		return
	}

	if !t.Run("Operator", func(t *testing.T) {
		b.t = t
		b.click("#signout")
		b.visible("#signin-token")
		if got := b.js(`sessionStorage.getItem('herald.console.session') || ''`); got != "" {
			t.Errorf("sign out left %q", got)
		}
		b.typeIn("#signin-token", d.adminToken)
		b.click("#signin-token-submit")
		b.waitFor("the companies page", `document.querySelector('h1')?.textContent === 'Companies'`, 10*time.Second)
		listing := d.status(http.MethodGet, "/admin/v1/companies", nil) == http.StatusOK
		if !listing {
			t.Log("GET /admin/v1/companies is not on this server: the page shows the listing as unavailable")
			b.waitFor("the unavailable state", `document.querySelector('#companies [data-state="unavailable"]')`, 10*time.Second)
		} else {
			b.waitFor("the demo company", `document.querySelector('#companies-table')?.textContent.includes('Herald Demo')`, 10*time.Second)
		}
		name := "Acme " + suffix
		b.typeIn("#company-name", name)
		b.click("#company-create")
		b.waitFor("the company page", `document.querySelector('h1')?.textContent === `+strconv.Quote(name), 10*time.Second)
		companyID := strings.TrimPrefix(b.js(`location.hash`), "#/operator/companies/")
		b.waitFor("inactive", `document.querySelector('#company-status .badge')?.dataset.active === 'false'`, 5*time.Second)
		b.click("#company-toggle")
		b.waitFor("active", `document.querySelector('#company-status .badge')?.dataset.active === 'true'`, 10*time.Second)
		// Rate limit.
		b.typeIn("#rate-input", "50")
		b.click("#rate-save")
		b.waitFor("the rate", `document.querySelector('#page-title')?.parentElement?.parentElement?.textContent.includes('50 messages a second')`, 10*time.Second)
		// Sender: register, then approve.
		b.typeIn("#sender-id", "ACME")
		b.click("#sender-register")
		b.waitFor("the sender waiting", `document.querySelector('#senders-table button[data-sender-id="ACME"]')`, 10*time.Second)
		b.click(`#senders-table button[data-sender-id="ACME"]`)
		b.waitFor("the approved sender", `document.querySelector('#senders-table [data-approved="true"]') && !document.querySelector('#senders-table button[data-sender-id="ACME"]')`, 10*time.Second)
		// Chat service.
		b.typeIn("#chat-brand", "Acme")
		b.typeIn("#chat-service-id", "acme-"+suffix)
		b.click("#chat-add")
		b.waitFor("the chat service", `document.querySelector('#chat-table')?.textContent.includes('acme-`+suffix+`')`, 10*time.Second)
		// Its provider, endpoint and credentials: the credentials are
		// written once and never shown, only whether they are set.
		if b.js(`document.querySelector('#chat-table button[data-chat-service]') ? 'edit' : ''`) == "edit" {
			const secret = "tok-Zr8q-never-shown"
			lastRow := `#chat-table tbody tr:last-child`
			b.waitFor("no credentials yet", `document.querySelector('`+lastRow+` [data-credentials-set]')?.dataset.credentialsSet === 'false'`, 5*time.Second)
			b.click(lastRow + ` button[data-chat-service]`)
			b.waitFor("the edit form", `document.querySelector('#chat-form')?.dataset.editing !== ''`, 5*time.Second)
			b.choose("#chat-provider", "herald")
			b.typeIn("#chat-base-url", "https://chat.example.com")
			b.typeIn("#chat-credentials", `{"token": "`+secret+`", "callbackSecret": "cb-`+suffix+`"}`)
			b.click("#chat-add")
			b.waitFor("credentials set", `document.querySelector('`+lastRow+` [data-credentials-set]')?.dataset.credentialsSet === 'true'`, 10*time.Second)
			b.waitFor("the add form again", `document.querySelector('#chat-form')?.dataset.editing === '' && document.querySelector('#chat-credentials').value === ''`, 5*time.Second)
			// A second edit without credentials keeps them.
			b.click(lastRow + ` button[data-chat-service]`)
			b.waitFor("the stored credentials told", `document.querySelector('#chat-credentials-state')?.textContent.includes('Credentials are set')`, 5*time.Second)
			b.js(`(() => { const i = document.querySelector('#chat-brand'); i.value = ''; return ''; })()`)
			b.typeIn("#chat-brand", "Acme Viber")
			b.click("#chat-add")
			b.waitFor("the new brand", `document.querySelector('`+lastRow+`')?.textContent.includes('Acme Viber')`, 10*time.Second)
			if got := b.js(`document.querySelector('` + lastRow + ` [data-credentials-set]').dataset.credentialsSet`); got != "true" {
				t.Errorf("an edit without credentials dropped them: credentialsSet %s", got)
			}
			if b.js(`document.documentElement.outerHTML.includes('`+secret+`') ? 'shown' : ''`) != "" {
				t.Errorf("the page shows the credentials")
			}
		} else {
			t.Log("this server cannot edit chat services")
		}
		// API key: shown once.
		b.typeIn("#key-name", "production")
		b.click("#key-create")
		b.waitFor("the new key", `/^om_[A-Za-z0-9]{32}$/.test(document.querySelector('#new-key-value')?.textContent || '')`, 10*time.Second)
		first := b.text("#new-key-value")
		// A second key with a grace: the first keeps working, and the list
		// says when it expires.
		b.typeIn("#key-name", "rotated")
		b.js(`(() => { const s = document.querySelector('#key-grace'); s.value = '3600'; s.dispatchEvent(new Event('change')); return ''; })()`)
		b.click("#key-create")
		b.waitFor("the second key", `/^om_[A-Za-z0-9]{32}$/.test(document.querySelector('#new-key-value')?.textContent || '') && document.querySelector('#new-key-value').textContent !== `+strconv.Quote(first), 10*time.Second)
		b.waitFor("the first key's expiry", `document.querySelectorAll('#keys-table .key-expires').length === 1`, 10*time.Second)
		fd := &demo{base: d.base, apiKey: first}
		if code := fd.status(http.MethodGet, "/api/v1/sms-senders", nil); code != http.StatusOK {
			t.Errorf("the first key in its grace answers %d", code)
		}
		// A third key at once: the console asks before it revokes the others.
		b.typeIn("#key-name", "final")
		b.js(`(() => { const s = document.querySelector('#key-grace'); s.value = '0'; s.dispatchEvent(new Event('change')); return ''; })()`)
		b.click("#key-create")
		b.visible("dialog[open] #confirm-ok")
		if text := b.text("dialog[open]"); !strings.Contains(text, "revokes the company’s other 2 keys") {
			t.Errorf("the question does not say the other keys are revoked: %q", text)
		}
		b.click("dialog[open] #confirm-ok")
		b.waitFor("the third key", `document.querySelectorAll('#keys-table tbody tr').length === 1 && !document.querySelector('#keys-table .key-expires')`, 10*time.Second)
		if code := fd.status(http.MethodGet, "/api/v1/sms-senders", nil); code != http.StatusUnauthorized {
			t.Errorf("the first key, revoked by the third, answers %d", code)
		}
		key := b.text("#new-key-value")
		// The key works for the new company.
		kd := &demo{base: d.base, apiKey: key}
		senders, err := kd.client(t).ListSMSSenders(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(senders) != 1 || senders[0].SenderID != "ACME" {
			t.Errorf("the new company's senders: %v", senders)
		}
		b.shot("operator-company.png")
		// Revoking the key, where the server lists keys.
		if b.js(`document.querySelector('#keys-table') ? 'list' : ''`) == "list" {
			b.click("#keys-table button")
			b.visible("dialog[open] #confirm-ok")
			b.click("dialog[open] #confirm-ok")
			b.waitFor("no key left", `!document.querySelector('#keys-table')`, 10*time.Second)
			if code := kd.status(http.MethodGet, "/api/v1/sms-senders", nil); code != http.StatusUnauthorized {
				t.Errorf("the revoked key answers %d", code)
			}
		} else {
			t.Log("this server cannot list or revoke single keys")
		}
		// A second company of the same name: refused next to the name when
		// the server keeps names unique.
		b.open("#/operator/companies")
		b.visible("#company-name")
		b.typeIn("#company-name", name)
		b.click("#company-create")
		b.waitFor("an answer", `document.querySelector('[data-field="name"].has-error') || /^#\/operator\/companies\/[0-9a-f-]{36}$/.test(location.hash)`, 10*time.Second)
		if b.js(`document.querySelector('[data-field="name"].has-error') ? 'error' : ''`) == "error" {
			t.Logf("duplicate name refused: %s", b.text(`[data-field="name"] .field-error`))
		} else {
			t.Log("this server accepted a second company of the same name (no 409 yet)")
		}
		b.open("#/operator/companies")
		b.waitFor("the company in the list", `document.querySelector('#companies-table')?.textContent.includes(`+strconv.Quote(name)+`)`, 10*time.Second)
		b.shot("operator-companies.png")
		_ = companyID
		b.checkProblems()
	}) {
		return
	}
	if !t.Run("ConnectorsAndRoutes", func(t *testing.T) {
		b.t = t
		b.click(`.mainnav a[href="#/operator/connectors"]`)
		// The demo's connectors, the backup one bound to its SMSC.
		b.waitFor("the backup connector up", `document.querySelector('#connectors-table tr[data-connector="demo-backup"] [data-state]')?.dataset.state === 'healthy'`, 30*time.Second)
		// Its live state as the admin API has it: binds up of binds,
		// window in use, submits and errors.
		headers := b.js(`[...document.querySelectorAll('#connectors-table thead th')].map((th) => th.textContent).join('|')`)
		for _, col := range []string{"Binds up", "Window in use", "Submits", "Errors"} {
			if !strings.Contains(headers, col) {
				t.Errorf("the connectors table has no %q column: %s", col, headers)
			}
		}
		var backup struct {
			State struct{ Binds, BindsUp int } `json:"state"`
		}
		if err := json.Unmarshal([]byte(d.get(t, "/admin/v1/smpp-connectors/demo-backup")), &backup); err != nil {
			t.Fatal(err)
		}
		if backup.State.BindsUp == 0 {
			t.Fatalf("the healthy backup connector has no bind up: %+v", backup)
		}
		b.waitFor("its binds up", `document.querySelector('#connectors-table tr[data-connector="demo-backup"] .binds-up')?.textContent === `+
			strconv.Quote(fmt.Sprintf("%d / %d", backup.State.BindsUp, backup.State.Binds)), 10*time.Second)
		const pw = "pQx7w2zk"
		name := "spare-" + suffix
		b.typeIn("#conn-name", name)
		b.typeIn("#conn-addr", "127.0.0.1:1")
		b.typeIn("#conn-system-id", "herald")
		b.typeIn("#conn-password", pw)
		b.typeIn("#conn-binds", "2")
		b.click("#conn-save")
		row := `#connectors-table tr[data-connector="` + name + `"]`
		b.waitFor("the new connector", `document.querySelector('`+row+` [data-password-set]')?.dataset.passwordSet === 'true'`, 10*time.Second)
		// Nothing listens there: its binds stay down.
		b.waitFor("its state", `['down', 'none'].includes(document.querySelector('`+row+` [data-state]')?.dataset.state)`, 20*time.Second)
		b.waitFor("no bind up", `document.querySelector('`+row+` .binds-up')?.textContent === '0 / 2'`, 20*time.Second)
		// An edit without a password keeps it.
		b.click(row + ` button[data-edit]`)
		b.waitFor("the edit form", `document.querySelector('#conn-form').dataset.editing === `+strconv.Quote(name)+` && document.querySelector('#conn-password-state').textContent.includes('is set')`, 5*time.Second)
		if v := b.js(`document.querySelector('#conn-password').value`); v != "" {
			t.Errorf("the form shows the password back: %q", v)
		}
		b.typeIn("#conn-window", "25")
		b.click("#conn-save")
		b.waitFor("the new window", `document.querySelector('`+row+`')?.textContent.includes('window 25')`, 10*time.Second)
		var conn struct {
			PasswordSet bool `json:"passwordSet"`
			Window      int  `json:"window"`
			Binds       int  `json:"binds"`
		}
		if err := json.Unmarshal([]byte(d.get(t, "/admin/v1/smpp-connectors/"+name)), &conn); err != nil {
			t.Fatal(err)
		}
		if !conn.PasswordSet || conn.Window != 25 || conn.Binds != 2 {
			t.Errorf("connector after the edit: %+v", conn)
		}
		if b.js(`document.documentElement.outerHTML.includes('`+pw+`') ? 'shown' : ''`) != "" {
			t.Errorf("the page shows the password")
		}
		b.shot("connectors.png")

		// Routes: one sends 3363 to the new connector, then the backup.
		b.click(`.mainnav a[href="#/operator/routes"]`)
		b.visible("#route-prefixes")
		b.typeIn("#route-prefixes", "3363")
		b.typeIn("#route-connectors", "")
		b.click("#route-save")
		b.waitFor("the connectors' error", `document.querySelector('[data-field="connectors"].has-error')`, 5*time.Second)
		b.typeIn("#route-connectors", name+" demo-backup")
		b.typeIn("#route-position", "1")
		b.click("#route-save")
		b.waitFor("the route", `[...document.querySelectorAll('#routes-table tbody tr')].some((r) => r.textContent.includes('3363'))`, 10*time.Second)
		routeRow := `[...document.querySelectorAll('#routes-table tbody tr')].find((r) => r.textContent.includes('3363'))`
		rid := b.js(routeRow + `.dataset.routeId`)
		b.click(`#routes-table tr[data-route-id="` + rid + `"] button[data-edit]`)
		b.choose("#route-strategy", "weighted")
		b.typeIn("#route-connectors", name+":3 demo-backup:1")
		b.click("#route-save")
		b.waitFor("the weighted route", `document.querySelector('#routes-table tr[data-route-id="`+rid+`"]')?.textContent.includes('weight 3')`, 10*time.Second)
		routes := d.get(t, "/admin/v1/routes")
		if !strings.Contains(routes, `"weighted"`) || !strings.Contains(routes, `"3363"`) {
			t.Errorf("routes after the edit: %s", routes)
		}
		// The table lists the routes in the order they are tried: the new
		// one, at position 1, before the demo's catch-all.
		var list struct {
			Routes []struct {
				ID       int64 `json:"id"`
				Position int   `json:"position"`
			} `json:"routes"`
		}
		if err := json.Unmarshal([]byte(routes), &list); err != nil {
			t.Fatal(err)
		}
		position := map[string]int{}
		for _, r := range list.Routes {
			position[strconv.FormatInt(r.ID, 10)] = r.Position
		}
		if position[rid] != 1 {
			t.Errorf("the new route is at position %d, want 1", position[rid])
		}
		order := strings.Split(b.js(`[...document.querySelectorAll('#routes-table tbody tr')].map((r) => r.dataset.routeId).join(',')`), ",")
		if len(order) < 2 || order[0] != rid {
			t.Errorf("routes in the table %v, want %s first", order, rid)
		}
		for i := 1; i < len(order); i++ {
			if position[order[i]] < position[order[i-1]] {
				t.Errorf("route %s (position %d) is listed after %s (position %d)", order[i], position[order[i]], order[i-1], position[order[i-1]])
			}
		}
		// The route is deleted, then the connector.
		b.shot("routes.png")
		b.click(`#routes-table tr[data-route-id="` + rid + `"] button[data-delete]`)
		b.visible("dialog[open] #confirm-ok")
		b.click("dialog[open] #confirm-ok")
		b.waitFor("the route gone", `!document.querySelector('#routes-table tr[data-route-id="`+rid+`"]')`, 10*time.Second)
		b.click(`.mainnav a[href="#/operator/connectors"]`)
		b.visible(row + ` button[data-delete]`)
		b.click(row + ` button[data-delete]`)
		b.visible("dialog[open] #confirm-ok")
		b.click("dialog[open] #confirm-ok")
		b.waitFor("the connector gone", `document.querySelector('#connectors-table') && !document.querySelector('`+row+`')`, 10*time.Second)
		if code := d.status(http.MethodGet, "/admin/v1/smpp-connectors/"+name, nil); code != http.StatusNotFound {
			t.Errorf("the deleted connector answers %d", code)
		}
		b.checkProblems()
	}) {
		return
	}

	if !t.Run("OperatorOverview", func(t *testing.T) {
		b.t = t
		b.click(`.mainnav a[href="#/operator/overview"]`)
		b.waitFor("the connectors", `document.querySelector('#overview-connectors-table tr[data-connector="demo-backup"]')`, 10*time.Second)
		var list struct {
			Connectors []struct{} `json:"connectors"`
		}
		if err := json.Unmarshal([]byte(d.get(t, "/admin/v1/smpp-connectors")), &list); err != nil {
			t.Fatal(err)
		}
		if got := b.js(`String(document.querySelectorAll('#overview-connectors-table tbody tr').length)`); got != strconv.Itoa(len(list.Connectors)) {
			t.Errorf("%s connector rows, want %d", got, len(list.Connectors))
		}
		if got := b.text("#ov-healthy dd"); !strings.HasSuffix(got, "/ "+strconv.Itoa(len(list.Connectors))) {
			t.Errorf("healthy counter %q", got)
		}
		// Each connector's throughput, in submits a second.
		if got := b.js(`String([...document.querySelectorAll('#overview-connectors-table tbody tr')].filter((r) => /^\d+\.\d\/s$/.test(r.children[4].textContent)).length)`); got != strconv.Itoa(len(list.Connectors)) {
			t.Errorf("%s connector rows show a throughput, want %d", got, len(list.Connectors))
		}
		// Every company's messages of today, as GET /admin/v1/summary
		// counts them, and a row per company with messages.
		midnight := b.js(`(() => { const d = new Date(); d.setHours(0, 0, 0, 0); return d.toISOString(); })()`)
		sum := summaryOf(t, d.get(t, "/admin/v1/summary?since="+url.QueryEscape(midnight)))
		if sum.Total == 0 {
			t.Fatal("no message today: the earlier steps sent some")
		}
		b.waitFor("the totals", `document.querySelector('#ov-total dd')?.textContent.replace(/\D/g, '') === '`+strconv.Itoa(sum.Total)+`'`, 10*time.Second)
		if got := b.js(`String(document.querySelectorAll('#overview-companies-table tbody tr').length)`); got != strconv.Itoa(len(sum.Companies)) {
			t.Errorf("%s company rows, want %d", got, len(sum.Companies))
		}
		for _, c := range sum.Companies {
			if got := digits(b.js(`document.querySelector('#overview-companies-table tr[data-company="` + c.CompanyID + `"]')?.children[1].textContent || ''`)); got != strconv.Itoa(c.Total) {
				t.Errorf("company %s: %s messages, want %d", c.CompanyID, got, c.Total)
			}
		}
		b.shot("operator-overview.png")
		b.checkProblems()
	}) {
		return
	}
	t.Logf("browser suite took %s", time.Since(start).Round(time.Second))
}

// apiSummary is an answer of GET /api/v1/summary or /admin/v1/summary.
type apiSummary struct {
	Total     int            `json:"total"`
	ByStatus  map[string]int `json:"byStatus"`
	Companies []struct {
		CompanyID string `json:"companyId"`
		Total     int    `json:"total"`
	} `json:"companies"`
}

// summaryOf decodes a summary.
func summaryOf(t *testing.T, body string) apiSummary {
	t.Helper()
	var s apiSummary
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// digits keeps the digits of s.
func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}
