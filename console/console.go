// Package console is Herald Console, the web screens of a Herald server:
// a company's overview, campaigns (with live progress, a chart of
// deliveries over time and survey answers), messages, templates (with
// the server's SMS preview and a chat preview), bulk sends from a CSV
// file, inbound SMS, opt-outs and webhooks (with their delivery log),
// signed in with its API key; and the operator's overview, companies,
// keys, senders, chat services, SMPP connectors (with their live state)
// and routes, signed in with the admin token.
//
// The pages are static files (HTML, CSS and JavaScript modules, no build
// step) embedded in the binary; they call the HTTP API from the browser,
// so the console needs nothing but the server it is served by, and no
// request leaves the machine. The key or token is kept in the browser's
// session storage only.
//
// The browser tests in this package run herald serve --demo and drive
// Chromium through the console; they run when HERALD_TEST_BROWSER=1.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// CSP is the Content-Security-Policy of every answer of the console:
// scripts, styles and connections to this server only, no inline script
// or style, images from this server or data: URLs.
const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"

// Handler serves the console under prefix (as "/console/"): its files,
// and the index page for every other path, so that any address under the
// prefix opens the console. A missing file with an extension (a stale
// script or style) is a 404 rather than the index page. Files are
// answered with an ETag of their content and Cache-Control no-cache, so a
// browser revalidates them and a new binary's files are taken at once.
func Handler(prefix string) http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	// The index page is served for any path under prefix: a base element
	// keeps its relative addresses on the console's own files.
	base := prefix
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	index = bytes.Replace(index, []byte("<head>"), []byte(`<head>
<base href="`+html.EscapeString(base)+`">`), 1)
	indexTag := etag(index)
	etags := map[string]string{}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		etags[p] = etag(b)
		return nil
	})
	if err != nil {
		panic(err)
	}
	files := http.FileServerFS(sub)
	return http.StripPrefix(prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Frame-Options", "DENY")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		p := strings.TrimPrefix(r.URL.Path, "/")
		if tag, ok := etags[p]; ok && p != "index.html" {
			h.Set("ETag", tag)
			h.Set("Cache-Control", "no-cache")
			files.ServeHTTP(w, r)
			return
		}
		if ext := path.Ext(p); ext != "" && p != "index.html" && !strings.HasSuffix(p, "/") {
			http.NotFound(w, r)
			return
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", indexTag)
		if match := r.Header.Get("If-None-Match"); match != "" && match == indexTag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(index)
	}))
}

// etag is the entity tag of a file's content.
func etag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}
