package smscsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"time"
)

// Count is how many times the Server received one text for one
// destination: Count above 1 is a duplicate delivery.
type Count struct {
	To    string `json:"to"`
	Text  string `json:"text"`
	Count int    `json:"count"`
}

// Counts groups the texts received (Config.Record) by destination and
// text, sorted by destination then text.
func (s *Server) Counts() []Count {
	type key struct{ to, text string }
	n := map[key]int{}
	for _, m := range s.Messages() {
		n[key{m.To, m.Text}]++
	}
	out := make([]Count, 0, len(n))
	for k, c := range n {
		out = append(out, Count{To: k.to, Text: k.text, Count: c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].To != out[j].To {
			return out[i].To < out[j].To
		}
		return out[i].Text < out[j].Text
	})
	return out
}

// ControlHandler returns an HTTP handler that drives the Server from
// another process, for fault tests of a program that talks to it:
//
//	GET  /stats                     Stats
//	POST /stall?what=submits,...    Stall (what as ParseStall reads it; default all)
//	POST /resume                    Resume
//	POST /drop                      DropConnections
//	POST /drop-mid-window           DropMidWindow
//	POST /refuse-binds?for=30s      RefuseBinds (for as time.ParseDuration reads it; 0 ends it)
//	GET  /rate                      SubmitsPerSecond
//	PUT  /faults                    SetFaults with a Faults in the body (durations in nanoseconds)
//	GET  /parts                     Parts (Config.Record)
//	GET  /messages?to=NUMBER        Messages, or MessagesTo when to is given (Config.Record)
//	GET  /counts                    Counts (Config.Record)
//	POST /mo                        SendMO with {"from", "to", "text"} in the body
//
// Answers are JSON; the POST and PUT answer the Stats that follow. It has
// no authentication: serve it on loopback only.
func (s *Server) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Stats()) })
	mux.HandleFunc("POST /stall", func(w http.ResponseWriter, r *http.Request) {
		what := StallAll
		if q := r.URL.Query().Get("what"); q != "" {
			st, err := ParseStall(q)
			if err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
				return
			}
			what = st
		}
		s.Stall(what)
		writeJSON(w, http.StatusOK, s.Stats())
	})
	mux.HandleFunc("POST /resume", func(w http.ResponseWriter, _ *http.Request) {
		s.Resume()
		writeJSON(w, http.StatusOK, s.Stats())
	})
	mux.HandleFunc("POST /drop", func(w http.ResponseWriter, _ *http.Request) {
		s.DropConnections()
		writeJSON(w, http.StatusOK, s.Stats())
	})
	mux.HandleFunc("POST /drop-mid-window", func(w http.ResponseWriter, _ *http.Request) {
		s.DropMidWindow()
		writeJSON(w, http.StatusOK, s.Stats())
	})
	mux.HandleFunc("POST /refuse-binds", func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.URL.Query().Get("for"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("refuse-binds: for: %v", err)})
			return
		}
		s.RefuseBinds(d)
		writeJSON(w, http.StatusOK, s.Stats())
	})
	mux.HandleFunc("GET /rate", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, nonNil(s.SubmitsPerSecond()))
	})
	mux.HandleFunc("PUT /faults", func(w http.ResponseWriter, r *http.Request) {
		var f Faults
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "faults: " + err.Error()})
			return
		}
		s.SetFaults(f)
		writeJSON(w, http.StatusOK, s.Stats())
	})
	mux.HandleFunc("GET /parts", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, nonNil(s.Parts())) })
	mux.HandleFunc("GET /messages", func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			writeJSON(w, http.StatusOK, nonNil(s.MessagesTo(to)))
			return
		}
		writeJSON(w, http.StatusOK, nonNil(s.Messages()))
	})
	mux.HandleFunc("GET /counts", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Counts()) })
	mux.HandleFunc("POST /mo", func(w http.ResponseWriter, r *http.Request) {
		var mo struct{ From, To, Text string }
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
		if err := dec.Decode(&mo); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "mo: " + err.Error()})
			return
		}
		if err := s.SendMO(mo.From, mo.To, mo.Text); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, s.Stats())
	})
	return mux
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
