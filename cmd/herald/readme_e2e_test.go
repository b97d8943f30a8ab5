package main_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readmeScreen is the README's first screen, in lines: the first SMS and
// the first chat message with its fallback are shown within it.
const readmeScreen = 60

// readmeSendRE matches a send of the README: its JSON body and its path.
var readmeSendRE = regexp.MustCompile(`(?s)-d '(\{[^']*\})'[\s\\]*\$API(/[a-z/-]+)`)

// testReadme runs the README's first screen against the demo: each
// section's send, its body as written, and then the messages the section
// shows as its outcome (the "# {...}" lines), compared on the fields
// they name.
func testReadme(t *testing.T, bin string) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	lines := strings.Split(string(raw), "\n")
	type section struct {
		title, text string
		last        int // the line of its last outcome, from 1
		want        []string
	}
	var sections []*section
	for i, line := range lines {
		if title, ok := strings.CutPrefix(line, "## "); ok {
			sections = append(sections, &section{title: title})
			continue
		}
		if len(sections) == 0 {
			continue
		}
		s := sections[len(sections)-1]
		s.text += line + "\n"
		if out, ok := strings.CutPrefix(strings.TrimSpace(line), "# {"); ok {
			s.want = append(s.want, "{"+out)
			s.last = i + 1
		}
	}
	var sends []*section
	for _, s := range sections {
		if readmeSendRE.MatchString(s.text) && len(s.want) > 0 {
			sends = append(sends, s)
		}
	}
	require.Len(t, sends, 2, "the README shows a first SMS and a first chat message, each with its outcome")
	require.Contains(t, sends[1].title, "fallback")
	require.LessOrEqual(t, sends[1].last, readmeScreen, "the chat message's outcome is on the README's first screen")

	h := startHerald(t, bin, heraldEnv("HERALD_DATABASE_URL=sqlite://"+filepath.Join(t.TempDir(), "herald.db")), "serve", "--demo")
	require.Contains(t, h.stdout.String(), "export API="+h.base+"/api/v1 KEY="+h.key, "the demo prints the README's export line")
	api := h.client(h.key)
	for _, s := range sends {
		m := readmeSendRE.FindStringSubmatch(s.text)
		var sent sendJSON
		api.api("POST", m[2], m[1], http.StatusAccepted, &sent)
		// Each outcome line names the fields it shows.
		var fields []string
		var first map[string]any
		require.NoError(t, json.Unmarshal([]byte(s.want[0]), &first), s.want[0])
		for k := range first {
			fields = append(fields, k)
		}
		want := slices.Clone(s.want)
		for i := range want {
			want[i] = canonical(t, want[i], fields)
		}
		slices.Sort(want)
		var got []string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			var page struct{ Messages []map[string]any }
			api.api("GET", "/messages?campaignId="+sent.CampaignID, "", http.StatusOK, &page)
			got = got[:0]
			for _, msg := range page.Messages {
				b, err := json.Marshal(msg)
				require.NoError(t, err)
				got = append(got, canonical(t, string(b), fields))
			}
			slices.Sort(got)
			if slices.Equal(got, want) {
				break
			}
		}
		require.Equal(t, want, got, "%s: the messages as the README shows them", s.title)
	}
}

// canonical is the JSON object of text with only fields, keys sorted.
func canonical(t *testing.T, text string, fields []string) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(text), &m), text)
	out := map[string]any{}
	for _, f := range fields {
		out[f] = m[f]
	}
	b, err := json.Marshal(out)
	require.NoError(t, err)
	return string(b)
}
