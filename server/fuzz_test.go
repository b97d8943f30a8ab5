package server_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/server"
)

// fuzzLimit is the recipient limit of the fuzzed decoder: small, so that
// "Too many recipients" is within the fuzzer's reach.
const fuzzLimit = 50

// allocBound is the most the decoder may allocate for a body of n bytes:
// a fixed allowance (decoder state, the text batch, error answers) and a
// multiple of the body (a placeholders map of a few hundred bytes can
// stand for a recipient of about twenty).
func allocBound(n int) uint64 { return 1<<20 + 64*uint64(n) }

// stdRecipient and stdRequest decode a sending request with encoding/json,
// the reference the streaming decoder must agree with.
type stdRecipient struct {
	PhoneNumber    string                     `json:"phoneNumber"`
	ExternalUserID string                     `json:"externalUserId"`
	Placeholders   map[string]json.RawMessage `json:"placeholders"`
}

type stdRequest struct {
	TemplateID   string                     `json:"templateId"`
	Placeholders map[string]json.RawMessage `json:"placeholders"`
	Recipients   []stdRecipient             `json:"recipients"`
}

// placeholderStrings turns placeholders decoded by encoding/json into the
// strings the server keeps: strings unquoted, numbers and booleans as
// written, null values left out.
func placeholderStrings(t *testing.T, m map[string]json.RawMessage) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, raw := range m {
		switch {
		case string(raw) == "null":
		case raw[0] == '"':
			var s string
			require.NoError(t, json.Unmarshal(raw, &s))
			out[k] = s
		default:
			out[k] = string(raw)
		}
	}
	return out
}

// sameMap compares placeholders, an empty map being the same as none.
func sameMap(t *testing.T, want, got map[string]string, msg string) {
	if len(want) == 0 && len(got) == 0 {
		return
	}
	require.True(t, maps.Equal(want, got), "%s: want %v, got %v", msg, want, got)
}

// foldKey is the key under which encoding/json matches a name to a field:
// names with the same key are the same field to it.
func foldKey(name string) string {
	var b strings.Builder
	for _, r := range name {
		for {
			next := unicode.SimpleFold(r)
			if next <= r {
				r = next
				break
			}
			r = next
		}
		b.WriteRune(r)
	}
	return b.String()
}

// repeatsNames tells whether some object of body gives a name twice, or two
// names encoding/json takes for one field. Of those, encoding/json merges
// objects given twice where the server keeps the last, so such bodies are
// not compared.
func repeatsNames(body []byte) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	type object struct {
		names   map[string]bool
		nameNow bool // the next string token is a name
	}
	var stack []*object
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return false
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.nameNow && tok.Kind() == '"' {
			k := foldKey(tok.String())
			if top.names[k] {
				return true
			}
			top.names[k] = true
			top.nameNow = false
			continue
		}
		switch tok.Kind() {
		case '{':
			stack = append(stack, &object{names: map[string]bool{}, nameNow: true})
			continue
		case '}', ']':
			stack = stack[:len(stack)-1]
		case '[':
			stack = append(stack, nil)
			continue
		}
		if len(stack) > 0 && stack[len(stack)-1] != nil {
			stack[len(stack)-1].nameNow = true // a value ended: a name follows
		}
	}
}

// FuzzBulkRequest feeds the streaming decoder of sending requests. It must
// never panic, allocate within allocBound, answer every refusal with a 400
// or 413 in the error format, and read a request it accepts as
// encoding/json reads it. The seed corpus is in
// testdata/fuzz/FuzzBulkRequest.
func FuzzBulkRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, direct bool) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, status, answer := server.DecodeSend(body, fuzzLimit, direct)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		require.LessOrEqual(t, alloc, allocBound(len(body)), "allocated for a body of %d bytes", len(body))

		if status != 0 {
			require.Contains(t, []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge}, status, "answer: %s", answer)
			var e struct{ Error, Message string }
			require.NoError(t, json.Unmarshal(answer, &e), "answer: %s", answer)
			require.NotEmpty(t, e.Error)
			require.NotEmpty(t, e.Message)
			require.NotEqual(t, "Internal Server Error", e.Error)
			return
		}
		require.NotEmpty(t, got.Recipients)
		require.LessOrEqual(t, len(got.Recipients), fuzzLimit)
		if repeatsNames(body) {
			return
		}
		var want stdRequest
		dec := json.NewDecoder(bytes.NewReader(body))
		require.NoError(t, dec.Decode(&want), "the server accepted what encoding/json refuses")
		_, err := dec.Token()
		require.True(t, errors.Is(err, io.EOF), "the server accepted data after the object")
		require.Equal(t, want.TemplateID, got.TemplateID)
		sameMap(t, placeholderStrings(t, want.Placeholders), got.Placeholders, "placeholders")
		require.Len(t, got.Recipients, len(want.Recipients))
		for i, w := range want.Recipients {
			g := got.Recipients[i]
			require.Equal(t, w.PhoneNumber, g.Phone, "recipients[%d].phoneNumber", i)
			require.Equal(t, w.ExternalUserID, g.ExternalUserID, "recipients[%d].externalUserId", i)
			sameMap(t, placeholderStrings(t, w.Placeholders), g.Placeholders.Map(nil), "recipients placeholders")
		}
	})
}
