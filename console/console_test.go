package console_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald/console"
)

func get(t *testing.T, h http.Handler, path string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHandlerIndexForUnknownPaths(t *testing.T) {
	h := console.Handler("/console/")
	for _, p := range []string{"/console/", "/console/index.html", "/console/campaigns/123", "/console/operator/companies", "/console/js", "/console/js/"} {
		res := get(t, h, p)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", p, res.StatusCode)
		}
		if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", p, ct)
		}
		b := body(t, res)
		if !strings.Contains(b, `<script type="module" src="js/main.js"></script>`) {
			t.Errorf("%s: not the index page: %.200s", p, b)
		}
		if !strings.Contains(b, `<base href="/console/">`) {
			t.Errorf("%s: no base element: %.200s", p, b)
		}
		if cc := res.Header.Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("%s: Cache-Control %q", p, cc)
		}
	}
}

func TestHandlerMissingFileIs404(t *testing.T) {
	h := console.Handler("/console/")
	for _, p := range []string{"/console/js/missing.js", "/console/css/old.css", "/console/logo.png"} {
		if res := get(t, h, p); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", p, res.StatusCode)
		}
	}
}

func TestHandlerContentTypes(t *testing.T) {
	h := console.Handler("/console/")
	want := map[string]string{
		"/console/js/main.js":          "text/javascript; charset=utf-8",
		"/console/js/views/bulk.js":    "text/javascript; charset=utf-8",
		"/console/css/console.css":     "text/css; charset=utf-8",
		"/console/favicon.svg":         "image/svg+xml",
		"/console/js/views/company.js": "text/javascript; charset=utf-8",
	}
	for p, ct := range want {
		res := get(t, h, p)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", p, res.StatusCode)
		}
		if got := res.Header.Get("Content-Type"); got != ct {
			t.Errorf("%s: Content-Type %q, want %q", p, got, ct)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", p)
		}
	}
}

func TestHandlerSecurityHeaders(t *testing.T) {
	h := console.Handler("/console/")
	for _, p := range []string{"/console/", "/console/js/main.js", "/console/nowhere", "/console/missing.js"} {
		res := get(t, h, p)
		csp := res.Header.Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "img-src 'self' data:", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, d) {
				t.Errorf("%s: CSP %q lacks %q", p, csp, d)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP allows unsafe code: %q", p, csp)
		}
		if res.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: Referrer-Policy %q", p, res.Header.Get("Referrer-Policy"))
		}
	}
}

func TestHandlerETag(t *testing.T) {
	h := console.Handler("/console/")
	for _, p := range []string{"/console/js/main.js", "/console/"} {
		res := get(t, h, p)
		tag := res.Header.Get("ETag")
		if tag == "" {
			t.Fatalf("%s: no ETag", p)
		}
		if res := get(t, h, p, "If-None-Match", tag); res.StatusCode != http.StatusNotModified {
			t.Errorf("%s with its ETag: status %d, want 304", p, res.StatusCode)
		}
	}
}

func TestHandlerOnlyReads(t *testing.T) {
	h := console.Handler("/console/")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/console/", strings.NewReader("x")))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: status %d", rec.Code)
	}
}

// The CSP forbids inline script and style: the pages must not need them.
var (
	inlineScript  = regexp.MustCompile(`(?is)<script\b[^>]*>\s*[^<\s]`)
	scriptTag     = regexp.MustCompile(`(?is)<script\b([^>]*)>`)
	styleTag      = regexp.MustCompile(`(?is)<style\b`)
	styleAttr     = regexp.MustCompile(`(?is)\sstyle\s*=`)
	eventAttr     = regexp.MustCompile(`(?is)\son[a-z]+\s*=`)
	externalRef   = regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`)
	jsInnerHTML   = regexp.MustCompile(`\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(`)
	jsStyleString = regexp.MustCompile(`setAttribute\(\s*['"]style['"]`)
	jsRemoteURL   = regexp.MustCompile(`(?i)(fetch|import)\(\s*['"]https?://`)
)

func TestIndexHasNoInlineCode(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("assets", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if m := inlineScript.FindString(s); m != "" {
		t.Errorf("inline script: %q", m)
	}
	for _, m := range scriptTag.FindAllStringSubmatch(s, -1) {
		if !strings.Contains(m[1], "src=") {
			t.Errorf("script without src: %q", m[0])
		}
	}
	if styleTag.MatchString(s) || styleAttr.MatchString(s) {
		t.Error("inline style in index.html")
	}
	if m := eventAttr.FindString(s); m != "" {
		t.Errorf("inline event handler: %q", m)
	}
	if m := externalRef.FindString(s); m != "" {
		t.Errorf("reference to another host: %q", m)
	}
}

// TestAssetsStayLocal reads every script: no HTML strings parsed, no
// style attributes written (the CSP would refuse them), nothing fetched
// from another host, and no web fonts.
func TestAssetsStayLocal(t *testing.T) {
	err := fs.WalkDir(os.DirFS("assets"), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(filepath.Join("assets", p))
		if err != nil {
			return err
		}
		s := string(b)
		switch filepath.Ext(p) {
		case ".js":
			for _, re := range []*regexp.Regexp{jsInnerHTML, jsStyleString, jsRemoteURL} {
				if m := re.FindString(s); m != "" {
					t.Errorf("%s: %q", p, m)
				}
			}
			if strings.Contains(s, "console.log") {
				t.Errorf("%s: logs to the console", p)
			}
		case ".css":
			if strings.Contains(s, "@import") || strings.Contains(s, "@font-face") || regexp.MustCompile(`url\(\s*['"]?https?:`).MatchString(s) {
				t.Errorf("%s: loads something from elsewhere", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSecretStaysInSessionStorage: the key and token are never put in
// localStorage, a cookie or a URL by the scripts.
func TestSecretStaysInSessionStorage(t *testing.T) {
	err := fs.WalkDir(os.DirFS("assets"), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".js" {
			return err
		}
		b, err := os.ReadFile(filepath.Join("assets", p))
		if err != nil {
			return err
		}
		for _, bad := range []string{"localStorage", "document.cookie"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s uses %s", p, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
