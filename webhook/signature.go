package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The headers of a webhook request.
const (
	// SignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256>".
	SignatureHeader = "Herald-Signature"
	// EventIDHeader carries the event's id, the same on every attempt: a
	// receiver that has seen it may answer 2xx and do nothing.
	EventIDHeader = "Herald-Event-Id"
)

// DefaultTolerance is how far from the receiver's clock a signature's
// time may be for Verify to accept it: older requests are refused as
// possible replays.
const DefaultTolerance = 5 * time.Minute

// secretPrefix begins every secret, so that a leaked one is recognisable.
const secretPrefix = "whsec_"

// NewSecret returns a new random signing secret: "whsec_" and 32 random
// bytes in unpadded base64url.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webhook: new secret: %w", err)
	}
	return secretPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// Sign returns the signature header of body sent at t, with one v1 value
// for each secret, in the order given (the current secret first).
func Sign(t time.Time, body []byte, secrets ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(ts)
	for _, s := range secrets {
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(mac(s, ts, body)))
	}
	return b.String()
}

// mac is the HMAC-SHA256 of "<ts>.<body>" keyed with secret.
func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// The errors of Verify, which wraps one of them.
var (
	// ErrNoSignature: the header is missing or has no t or no v1.
	ErrNoSignature = errors.New("webhook: no signature")
	// ErrBadSignature: no v1 value matches the body and the secret.
	ErrBadSignature = errors.New("webhook: signature does not match")
	// ErrTooOld: the signature's time is further than the tolerance from now.
	ErrTooOld = errors.New("webhook: signature time outside the tolerance")
)

// Verify checks a request's signature header against its raw body and
// the endpoint's secret: one v1 value must be the HMAC of "<t>.<body>",
// and t within tolerance of now (no check when tolerance is 0 or less).
// The comparison takes the same time whatever the bytes.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	ts, sigs := "", []string(nil)
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	if ts == "" || len(sigs) == 0 {
		return ErrNoSignature
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: t is not a number", ErrNoSignature)
	}
	want := mac(secret, ts, body)
	matched := false
	for _, s := range sigs {
		got, err := hex.DecodeString(s)
		if err == nil && hmac.Equal(got, want) {
			matched = true
		}
	}
	if !matched {
		return ErrBadSignature
	}
	if tolerance > 0 {
		if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
			return fmt.Errorf("%w: signed at %s", ErrTooOld, time.Unix(sec, 0).UTC().Format(time.RFC3339))
		}
	}
	return nil
}
