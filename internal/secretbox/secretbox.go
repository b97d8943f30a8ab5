// Package secretbox seals the secrets Herald keeps at rest (SMPP
// passwords, webhook signing secrets, provider credentials) with
// AES-256-GCM, and opens them again.
//
// A key is 32 random bytes, written as base64 or hex (NewKey makes one).
// The key is never used directly: HKDF-SHA256 derives from it the AES key
// and a short key id. A sealed value is a text envelope,
//
//	v1:<key id>:<base64url of nonce and ciphertext>
//
// so that each value names the key it was sealed under. A Box holds the
// current key, which seals, and any number of previous keys, which still
// open: rotating a key means sealing again under the new key every value
// sealed under an old one, then dropping the old key.
//
// Seal and Open take a context string (for example "webhook:<id>") bound
// to the ciphertext as additional data: a value copied to another row or
// another kind of secret does not open there.
//
// Package secretbox uses the standard library only.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the size of a key in bytes.
const KeySize = 32

// version is the prefix of every sealed value of this format.
const version = "v1"

// ErrUnknownKey is the error of Open for a value sealed under a key the
// Box does not hold.
var ErrUnknownKey = errors.New("secretbox: sealed under a key not given")

// Key is one secret key, ready to seal and open.
type Key struct {
	id   string
	aead cipher.AEAD
}

// NewKey returns a new random key, base64-encoded, for ParseKey.
func NewKey() (string, error) {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("secretbox: new key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// ParseKey reads a key written as base64 (standard or URL alphabet,
// padded or not) or as hexadecimal; it must hold exactly 32 bytes. The
// error never repeats the text given.
func ParseKey(s string) (Key, error) {
	s = strings.TrimSpace(s)
	var raw []byte
	if len(s) == 2*KeySize {
		if b, err := hex.DecodeString(s); err == nil {
			raw = b
		}
	}
	if raw == nil {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(s); err == nil {
				raw = b
				break
			}
		}
	}
	if len(raw) != KeySize {
		return Key{}, fmt.Errorf("secretbox: a key is %d random bytes in base64 or hex (herald secrets new-key prints one)", KeySize)
	}
	return KeyFromBytes(raw)
}

// KeyFromBytes makes a key of 32 bytes.
func KeyFromBytes(raw []byte) (Key, error) {
	if len(raw) != KeySize {
		return Key{}, fmt.Errorf("secretbox: a key is %d bytes, not %d", KeySize, len(raw))
	}
	aesKey, err := hkdf.Key(sha256.New, raw, nil, "herald secretbox v1 aes-256-gcm", 32)
	if err != nil {
		return Key{}, fmt.Errorf("secretbox: derive the AES key: %w", err)
	}
	idBytes, err := hkdf.Key(sha256.New, raw, nil, "herald secretbox v1 key id", 6)
	if err != nil {
		return Key{}, fmt.Errorf("secretbox: derive the key id: %w", err)
	}
	block, err := aes.NewCipher(aesKey)
	if err != nil {
		return Key{}, fmt.Errorf("secretbox: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Key{}, fmt.Errorf("secretbox: %w", err)
	}
	return Key{id: hex.EncodeToString(idBytes), aead: aead}, nil
}

// ID returns the key's id: 12 hexadecimal digits derived from the key,
// which tell keys apart without saying anything of them.
func (k Key) ID() string { return k.id }

// Box seals under its current key and opens under any of its keys. It is
// safe for concurrent use.
type Box struct {
	current Key
	keys    map[string]Key
}

// New returns a Box sealing under current and opening values sealed under
// current or any of previous.
func New(current Key, previous ...Key) (*Box, error) {
	if current.aead == nil {
		return nil, errors.New("secretbox: no current key")
	}
	b := &Box{current: current, keys: map[string]Key{current.id: current}}
	for _, k := range previous {
		if k.aead == nil {
			return nil, errors.New("secretbox: a previous key is empty")
		}
		if _, ok := b.keys[k.id]; !ok {
			b.keys[k.id] = k
		}
	}
	return b, nil
}

// KeyID returns the id of the current key.
func (b *Box) KeyID() string { return b.current.id }

// Has tells whether the box holds the key of that id.
func (b *Box) Has(id string) bool {
	_, ok := b.keys[id]
	return ok
}

// Seal returns plaintext sealed under the current key, bound to context.
func (b *Box) Seal(plaintext, context string) (string, error) {
	k := b.current
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plaintext)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("secretbox: nonce: %w", err)
	}
	sealed := k.aead.Seal(nonce, nonce, []byte(plaintext), additional(k.id, context))
	return version + ":" + k.id + ":" + base64.RawURLEncoding.EncodeToString(sealed), nil
}

// Open returns the plaintext of a value Seal made with the same context.
// It fails with ErrUnknownKey when the value names a key the box does not
// hold, and with another error when the value is malformed, was altered,
// or was sealed for another context.
func (b *Box) Open(value, context string) (string, error) {
	id, payload, ok := parse(value)
	if !ok {
		return "", errors.New("secretbox: not a sealed value")
	}
	k, ok := b.keys[id]
	if !ok {
		return "", fmt.Errorf("%w: the value is sealed under key %s", ErrUnknownKey, id)
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || len(raw) < k.aead.NonceSize()+k.aead.Overhead() {
		return "", fmt.Errorf("secretbox: a value sealed under key %s is malformed", id)
	}
	n := k.aead.NonceSize()
	plain, err := k.aead.Open(nil, raw[:n], raw[n:], additional(id, context))
	if err != nil {
		return "", fmt.Errorf("secretbox: a value sealed under key %s does not open: altered, or sealed for another place", id)
	}
	return string(plain), nil
}

// IsSealed tells whether value has the form of a sealed value.
func IsSealed(value string) bool {
	_, _, ok := parse(value)
	return ok
}

// KeyIDOf returns the id of the key value is sealed under, and false when
// value is not a sealed value.
func KeyIDOf(value string) (string, bool) {
	id, _, ok := parse(value)
	return id, ok
}

// parse splits a sealed value into its key id and payload.
func parse(value string) (id, payload string, ok bool) {
	rest, ok := strings.CutPrefix(value, version+":")
	if !ok {
		return "", "", false
	}
	id, payload, ok = strings.Cut(rest, ":")
	if !ok || len(id) != 12 || payload == "" {
		return "", "", false
	}
	if _, err := hex.DecodeString(id); err != nil {
		return "", "", false
	}
	if _, err := base64.RawURLEncoding.DecodeString(payload); err != nil {
		return "", "", false
	}
	return id, payload, true
}

// additional is the additional data of a seal: the format, the key id and
// the context.
func additional(id, context string) []byte {
	return []byte(version + ":" + id + ":" + context)
}
