package secretbox_test

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/secretbox"
)

func mustKey(t *testing.T) secretbox.Key {
	t.Helper()
	s, err := secretbox.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k, err := secretbox.ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustBox(t *testing.T, current secretbox.Key, previous ...secretbox.Key) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(current, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSealOpen: a sealed value names its key, hides the plaintext, differs
// each time (a fresh nonce), and opens back in its own context only.
func TestSealOpen(t *testing.T) {
	k := mustKey(t)
	b := mustBox(t, k)
	v1, err := b.Seal("hunter22", "connector:default")
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := b.Seal("hunter22", "connector:default")
	if v1 == v2 {
		t.Fatal("two seals of one value are equal")
	}
	if !strings.HasPrefix(v1, "v1:"+k.ID()+":") || strings.Contains(v1, "hunter22") {
		t.Fatalf("sealed value %q", v1)
	}
	if id, ok := secretbox.KeyIDOf(v1); !ok || id != k.ID() || !secretbox.IsSealed(v1) {
		t.Fatalf("KeyIDOf(%q) = %q, %v", v1, id, ok)
	}
	got, err := b.Open(v1, "connector:default")
	if err != nil || got != "hunter22" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := b.Open(v1, "connector:backup"); err == nil {
		t.Fatal("a value opened in another context")
	}
	raw := []byte(v1)
	raw[len(raw)-2] ^= 1
	if _, err := b.Open(string(raw), "connector:default"); err == nil {
		t.Fatal("an altered value opened")
	}
	empty, _ := b.Seal("", "x")
	if got, err := b.Open(empty, "x"); err != nil || got != "" {
		t.Fatalf("empty value: %q, %v", got, err)
	}
}

// TestRotation: a box opens what its previous keys sealed and seals under
// its current key only; a box without the key fails with ErrUnknownKey,
// naming the key id and nothing of the value.
func TestRotation(t *testing.T) {
	old, cur := mustKey(t), mustKey(t)
	sealedOld, _ := mustBox(t, old).Seal("s3cret", "c")
	b := mustBox(t, cur, old)
	if got, err := b.Open(sealedOld, "c"); err != nil || got != "s3cret" {
		t.Fatalf("Open under a previous key = %q, %v", got, err)
	}
	again, _ := b.Seal("s3cret", "c")
	if id, _ := secretbox.KeyIDOf(again); id != cur.ID() || b.KeyID() != cur.ID() || !b.Has(old.ID()) {
		t.Fatalf("sealed under %s, want the current key %s", id, cur.ID())
	}
	_, err := mustBox(t, cur).Open(sealedOld, "c")
	if !errors.Is(err, secretbox.ErrUnknownKey) || !strings.Contains(err.Error(), old.ID()) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Open without the key: %v", err)
	}
}

// TestParseKey: base64 (either alphabet, padded or not) and hex of 32
// bytes give the same key; anything else is refused without echoing it.
func TestParseKey(t *testing.T) {
	raw := make([]byte, 32)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	var ids []string
	for _, s := range []string{base64.StdEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw),
		hex.EncodeToString(raw), " " + hex.EncodeToString(raw) + "\n"} {
		k, err := secretbox.ParseKey(s)
		if err != nil {
			t.Fatalf("ParseKey(%q): %v", s, err)
		}
		ids = append(ids, k.ID())
	}
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("key ids differ: %v", ids)
		}
	}
	for _, s := range []string{"", "short-secret-value", base64.StdEncoding.EncodeToString(raw[:16]), hex.EncodeToString(raw[:31])} {
		_, err := secretbox.ParseKey(s)
		if err == nil {
			t.Fatalf("ParseKey(%q) accepted", s)
		}
		if s != "" && strings.Contains(err.Error(), s) {
			t.Fatalf("the error repeats the key: %v", err)
		}
	}
}

// TestIsSealed: plaintext secrets, even ones that start like a sealed
// value, are not taken for sealed ones.
func TestIsSealed(t *testing.T) {
	for _, s := range []string{"", "password", "v1:abc:def", "v1:", "whsec_abc", "v1:0123456789ab:", "v1:0123456789zz:AAAA", "v1:0123456789ab:***"} {
		if secretbox.IsSealed(s) {
			t.Fatalf("IsSealed(%q)", s)
		}
	}
}
