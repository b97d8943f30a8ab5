package vonage

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Claims are the JWT claims Herald and Vonage exchange: the application's
// request token (RS256) and the webhook signature (HS256).
type Claims struct {
	ApplicationID string `json:"application_id,omitempty"`
	IssuedAt      int64  `json:"iat"`
	Expires       int64  `json:"exp,omitempty"`
	ID            string `json:"jti,omitempty"`
	Issuer        string `json:"iss,omitempty"`
	// PayloadHash, in a webhook's token, is the lower-case hex SHA-256
	// of the request body.
	PayloadHash string `json:"payload_hash,omitempty"`
	APIKey      string `json:"api_key,omitempty"`
}

// b64 is the encoding of a token's parts.
func b64() *base64.Encoding { return base64.RawURLEncoding }

// jwtHeader is the JOSE header of a token.
type jwtHeader struct {
	Alg string `json:"alg"`
	Typ string `json:"typ"`
}

// NewJTI returns a random token id.
func NewJTI() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// PayloadHash is the payload_hash claim of a webhook body: the lower-case
// hex SHA-256 of body.
func PayloadHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// signingInput is the base64url header and claims joined by a dot.
func signingInput(alg string, c Claims) (string, error) {
	h, err := json.Marshal(jwtHeader{Alg: alg, Typ: "JWT"})
	if err != nil {
		return "", fmt.Errorf("vonage: encode the token header: %w", err)
	}
	p, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("vonage: encode the token claims: %w", err)
	}
	return b64().EncodeToString(h) + "." + b64().EncodeToString(p), nil
}

// SignRS256 returns a JWT of claims c signed with key (the request
// token of a Vonage application).
func SignRS256(key *rsa.PrivateKey, c Claims) (string, error) {
	in, err := signingInput("RS256", c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(in))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", fmt.Errorf("vonage: sign the request token: %w", err)
	}
	return in + "." + b64().EncodeToString(sig), nil
}

// SignHS256 returns a JWT of claims c signed with secret (a webhook's
// signature).
func SignHS256(secret []byte, c Claims) (string, error) {
	in, err := signingInput("HS256", c)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(in))
	return in + "." + b64().EncodeToString(mac.Sum(nil)), nil
}

// tokenError is an error of a token check.
type tokenError string

func (e tokenError) Error() string { return string(e) }

// Errors of token checks.
const (
	errMalformed tokenError = "malformed token"
	errSignature tokenError = "token signature does not verify"
)

// splitToken returns a token's header, claims and signature, decoded.
func splitToken(tok string) (h jwtHeader, c Claims, input string, sig []byte, err error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return h, c, "", nil, errMalformed
	}
	hb, err1 := b64().DecodeString(parts[0])
	cb, err2 := b64().DecodeString(parts[1])
	sig, err3 := b64().DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return h, c, "", nil, errMalformed
	}
	if json.Unmarshal(hb, &h) != nil || json.Unmarshal(cb, &c) != nil {
		return h, c, "", nil, errMalformed
	}
	return h, c, parts[0] + "." + parts[1], sig, nil
}

// VerifyHS256 checks a webhook token's signature with secret and returns
// its claims. It checks neither the time nor the payload hash.
func VerifyHS256(secret []byte, tok string) (Claims, error) {
	h, c, in, sig, err := splitToken(tok)
	if err != nil {
		return Claims{}, err
	}
	if h.Alg != "HS256" {
		return Claims{}, fmt.Errorf("token algorithm %q, want HS256: %w", h.Alg, errSignature)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(in))
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return Claims{}, errSignature
	}
	return c, nil
}

// VerifyRS256 checks a request token's signature with pub and returns
// its claims. It checks neither the time nor the application.
func VerifyRS256(pub *rsa.PublicKey, tok string) (Claims, error) {
	h, c, in, sig, err := splitToken(tok)
	if err != nil {
		return Claims{}, err
	}
	if h.Alg != "RS256" {
		return Claims{}, fmt.Errorf("token algorithm %q, want RS256: %w", h.Alg, errSignature)
	}
	sum := sha256.Sum256([]byte(in))
	if rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) != nil {
		return Claims{}, errSignature
	}
	return c, nil
}

// Bearer returns the token of an Authorization header value "Bearer
// <token>", and false when it is not a bearer token.
func Bearer(h string) (string, bool) {
	const p = "bearer "
	if len(h) <= len(p) || !strings.EqualFold(h[:len(p)], p) {
		return "", false
	}
	return strings.TrimSpace(h[len(p):]), true
}
