// Package console is Herald Console, the web screens of a Herald server:
// a company's campaigns, messages, templates and survey answers, signed in
// with its API key, and the operator's companies, keys, senders and chat
// services, signed in with the admin token. The pages are static files
// embedded in the binary; they call the HTTP API from the browser, so the
// console needs nothing but the server it is served by, and no request
// leaves the machine.
package console

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// Handler serves the console under prefix (as "/console/"): its files,
// and the index page for every path that is not one, so that the pages'
// own addresses can be bookmarked. The pages keep the key or token in the
// browser's session storage only.
func Handler(prefix string) http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	files := http.FileServerFS(sub)
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	return http.StripPrefix(prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		if r.URL.Path != "" && r.URL.Path != "index.html" {
			if f, err := sub.Open(r.URL.Path); err == nil {
				f.Close()
				files.ServeHTTP(w, r)
				return
			}
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		_, _ = w.Write(index)
	}))
}
