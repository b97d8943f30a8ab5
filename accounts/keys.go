package accounts

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

// API key format: the prefix and the number of characters after it.
const (
	APIKeyPrefix = "om_"
	apiKeyBody   = 32
	keyAlphabet  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// MaxCompanyNameLen is the most characters of a company name.
const MaxCompanyNameLen = 200

// CreateCompany registers a company. It starts inactive, without a key.
func (s *Service) CreateCompany(ctx context.Context, name string) (messaging.Company, error) {
	name = strings.TrimSpace(name)
	var fe messaging.FieldErrors
	template.CheckField(&fe, "name", name, 1, MaxCompanyNameLen)
	if err := fe.Err(); err != nil {
		return messaging.Company{}, err
	}
	c := messaging.Company{ID: s.ids.New(), Name: name, CreatedAt: s.clock()}
	if err := s.store.CreateCompany(ctx, &c); err != nil {
		return messaging.Company{}, fmt.Errorf("create company: %w", err)
	}
	return c, nil
}

// GetCompany returns a company.
func (s *Service) GetCompany(ctx context.Context, id messaging.ID) (messaging.Company, error) {
	c, err := s.store.GetCompany(ctx, id)
	if err != nil {
		return messaging.Company{}, fmt.Errorf("get company: %w", err)
	}
	return c, nil
}

// SetCompanyActive activates or deactivates a company.
func (s *Service) SetCompanyActive(ctx context.Context, id messaging.ID, active bool) error {
	if err := s.store.SetCompanyActive(ctx, id, active); err != nil {
		return fmt.Errorf("set company active: %w", err)
	}
	s.keys.Clear()
	return nil
}

// MaxCompanyRate is the highest MaxPerSecond a company may be given.
const MaxCompanyRate = 100000

// SetCompanyRate sets the company's cap on messages handed to a provider
// a second (messaging.Company.MaxPerSecond), for every process sharing the
// store: between 0 (none) and MaxCompanyRate. The dispatchers apply it
// within their reload interval.
func (s *Service) SetCompanyRate(ctx context.Context, id messaging.ID, perSecond float64) (messaging.Company, error) {
	var fe messaging.FieldErrors
	if !(perSecond >= 0 && perSecond <= MaxCompanyRate) {
		fe.Add("maxPerSecond", "maxPerSecond must be between 0 (no cap) and %d", MaxCompanyRate)
	}
	if err := fe.Err(); err != nil {
		return messaging.Company{}, err
	}
	if err := s.store.SetCompanyRate(ctx, id, perSecond); err != nil {
		return messaging.Company{}, fmt.Errorf("set company rate: %w", err)
	}
	c, err := s.store.GetCompany(ctx, id)
	if err != nil {
		return messaging.Company{}, fmt.Errorf("set company rate: %w", err)
	}
	return c, nil
}

// MaxAPIKeys is the most API keys a company may have at once: the new
// key and those still in their grace period. Expired keys do not count.
const MaxAPIKeys = 20

// MaxAPIKeyNameLen is the most characters of an API key's name.
const MaxAPIKeyNameLen = 100

// MaxKeyGrace is the longest grace period a new key may give the
// company's other keys: 7 days.
const MaxKeyGrace = 7 * 24 * time.Hour

// CreateAPIKey makes a new API key for the company, `om_` followed by 32
// letters and digits, and returns it with its description: the key is
// shown once. The store keeps only the key's selector (its first 12
// characters after the prefix, the part it is looked up by) and the
// SHA-256 hash of the whole key.
//
// The new key replaces the company's other keys. With a zero grace they
// are revoked at once. With a grace (at most MaxKeyGrace) they keep
// working until it runs out, so that clients can move to the new key
// without downtime; a key whose grace runs out sooner keeps its own. Then
// they stop working on their own, in every process. name tells the keys
// apart (empty: "default"). A company has MaxAPIKeys at most, counting
// the keys in their grace period: Conflict beyond (a new key with no grace
// always fits).
func (s *Service) CreateAPIKey(ctx context.Context, companyID messaging.ID, name string, grace time.Duration) (string, messaging.APIKey, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name = "default"
	}
	var fe messaging.FieldErrors
	template.CheckField(&fe, "name", name, 1, MaxAPIKeyNameLen)
	if grace < 0 || grace > MaxKeyGrace {
		fe.Add("previousKeysExpireIn", "previousKeysExpireIn must be between 0 (at once) and %d seconds (7 days)", int(MaxKeyGrace/time.Second))
	}
	if err := fe.Err(); err != nil {
		return "", messaging.APIKey{}, err
	}
	// A selector already taken (about one chance in 3e21 per key) is
	// drawn again.
	for attempt := 0; ; attempt++ {
		key, err := s.newAPIKey()
		if err != nil {
			return "", messaging.APIKey{}, err
		}
		now := s.clock()
		k := messaging.APIKey{CompanyID: companyID, Name: name, CreatedAt: now}
		err = s.store.CreateAPIKey(ctx, &k, keySelector(key), hashKey(key), MaxAPIKeys, now.Add(grace))
		if messaging.IsCode(err, messaging.Conflict) && attempt < 3 && strings.Contains(err.Error(), "selector") {
			continue
		}
		if err != nil {
			return "", messaging.APIKey{}, fmt.Errorf("store API key: %w", err)
		}
		s.keys.Clear() // the other keys stop working (or expire sooner) here and now
		return key, k, nil
	}
}

// GenerateAPIKey makes a new API key for the company, named "default",
// and revokes every other key of the company at once: after it, only the
// key it returns works. It is CreateAPIKey without a grace period.
func (s *Service) GenerateAPIKey(ctx context.Context, companyID messaging.ID) (string, error) {
	key, _, err := s.CreateAPIKey(ctx, companyID, "default", 0)
	if err != nil {
		return "", fmt.Errorf("generate API key: %w", err)
	}
	return key, nil
}

// ListAPIKeys returns the company's keys that still work (their
// descriptions: the keys themselves are never kept), oldest first;
// NotFound for an unknown company.
func (s *Service) ListAPIKeys(ctx context.Context, companyID messaging.ID) ([]messaging.APIKey, error) {
	if _, err := s.store.GetCompany(ctx, companyID); err != nil {
		return nil, fmt.Errorf("list API keys: %w", err)
	}
	ks, err := s.store.ListAPIKeys(ctx, companyID)
	if err != nil {
		return nil, fmt.Errorf("list API keys: %w", err)
	}
	now := s.clock()
	out := ks[:0]
	for _, k := range ks {
		if !expired(k, now) {
			out = append(out, k)
		}
	}
	return out, nil
}

// expired reports whether k has stopped working at now.
func expired(k messaging.APIKey, now time.Time) bool {
	return k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)
}

// RevokeAPIKey revokes one of the company's keys: it stops working at
// once, in this process and (see Run) in the others sharing the store.
func (s *Service) RevokeAPIKey(ctx context.Context, companyID messaging.ID, id int64) error {
	if err := s.store.RevokeAPIKey(ctx, companyID, id); err != nil {
		return fmt.Errorf("revoke API key: %w", err)
	}
	s.keys.Clear()
	return nil
}

// ListCompanies returns a page of the companies, by name, and how many
// there are.
func (s *Service) ListCompanies(ctx context.Context, page messaging.PageRequest) ([]messaging.Company, int, error) {
	cs, total, err := s.store.ListCompanies(ctx, page)
	if err != nil {
		return nil, 0, fmt.Errorf("list companies: %w", err)
	}
	return cs, total, nil
}

func (s *Service) newAPIKey() (string, error) {
	raw := make([]byte, apiKeyBody)
	if _, err := io.ReadFull(s.rand, raw); err != nil {
		return "", fmt.Errorf("generate API key: %w", err)
	}
	var b strings.Builder
	b.WriteString(APIKeyPrefix)
	for _, r := range raw {
		// 256 is not a multiple of 62; the bias this leaves is below 1%
		// per character and irrelevant with 190 bits of key.
		b.WriteByte(keyAlphabet[int(r)%len(keyAlphabet)])
	}
	return b.String(), nil
}

// selectorLen is how many characters after the prefix form a key's
// selector. The other 20 (about 119 bits) are known only through the
// hash.
const selectorLen = 12

// keySelector returns the selector of a well-formed key.
func keySelector(key string) string {
	return key[len(APIKeyPrefix) : len(APIKeyPrefix)+selectorLen]
}

func hashKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// WellFormedAPIKey reports whether key has the shape of a Herald API key.
func WellFormedAPIKey(key string) bool {
	if len(key) != len(APIKeyPrefix)+apiKeyBody || !strings.HasPrefix(key, APIKeyPrefix) {
		return false
	}
	for i := len(APIKeyPrefix); i < len(key); i++ {
		if !strings.ContainsRune(keyAlphabet, rune(key[i])) {
			return false
		}
	}
	return true
}

// Authenticate returns the company one of whose API keys is key, and
// records, to the minute, that the key was used. A
// missing key is Unauthorized ("missing or invalid"), an unknown or revoked
// one Unauthorized ("invalid or revoked"), an expired one Unauthorized
// ("expired"), a company not activated
// Unavailable. A key is looked up by its selector, then its SHA-256 hash
// is compared with the stored one in constant time, so the time an answer
// takes tells nothing about how close a guess was.
func (s *Service) Authenticate(ctx context.Context, key string) (messaging.Company, error) {
	if key == "" {
		return messaging.Company{}, messaging.Errorf(messaging.Unauthorized, messaging.NameUnauthorized, "X-API-Key header is missing or invalid")
	}
	if !WellFormedAPIKey(key) {
		return messaging.Company{}, messaging.Errorf(messaging.Unauthorized, messaging.NameUnauthorized, "Invalid or revoked API key")
	}
	hash := hashKey(key)
	cacheKey := [32]byte(hash)
	cached := s.cacheOn()
	if ck, ok := s.keys.Get(cacheKey, time.Now()); ok && cached && (ck.expiresAt.IsZero() || s.clock().Before(ck.expiresAt)) {
		return ck.company, nil
	}
	// A revocation seen while the key is read must not be undone by
	// caching what was read before it.
	epoch := s.keys.Epoch()
	c, k, stored, err := s.store.CompanyByAPIKeySelector(ctx, keySelector(key))
	if err == nil && subtle.ConstantTimeCompare(stored, hash) != 1 {
		err = messaging.APIKeyNotFound()
	}
	if messaging.IsCode(err, messaging.NotFound) {
		return messaging.Company{}, messaging.Errorf(messaging.Unauthorized, messaging.NameUnauthorized, "Invalid or revoked API key")
	}
	if err != nil {
		return messaging.Company{}, fmt.Errorf("authenticate: %w", err)
	}
	now := s.clock()
	if expired(k, now) {
		return messaging.Company{}, messaging.Errorf(messaging.Unauthorized, messaging.NameUnauthorized,
			"API key expired: a newer key of the company replaced it")
	}
	if !c.Active {
		return messaging.Company{}, messaging.Errorf(messaging.Unavailable, messaging.NameServiceUnavailable, "Company account is not fully set up")
	}
	if k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) >= keyTouchEvery {
		// At most one write a key a minute (the cache keeps the key a
		// second); a failure loses nothing but the time of use.
		if err := s.store.TouchAPIKey(ctx, k.ID, now); err != nil {
			s.log.WarnContext(ctx, "recording an API key's use", "key", k.ID, "err", err)
		}
	}
	if cached {
		ttl, ck := s.keys.TTL, cachedKey{company: c}
		if k.ExpiresAt != nil {
			ttl = min(ttl, k.ExpiresAt.Sub(now)) // never past the key's expiry
			ck.expiresAt = *k.ExpiresAt
		}
		s.keys.PutSince(epoch, cacheKey, ck, time.Now(), ttl)
	}
	return c, nil
}

// keyTouchEvery is how often an API key's LastUsedAt is written, at most.
const keyTouchEvery = time.Minute
