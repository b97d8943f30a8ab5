package server_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/server"
)

func admin() reqOpt { return withHeader("Authorization", "Bearer "+adminToken) }

func TestAdminOnboarding(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/admin/v1/companies", map[string]any{"name": "Globex"}, admin())
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	c := r.obj()
	requireKeys(t, c, "id", "name", "active", "createdAt", "maxPerSecond")
	require.Equal(t, "Globex", c["name"])
	require.Equal(t, false, c["active"])
	id := c["id"].(string)

	r = e.do("POST", "/admin/v1/companies/"+id+"/api-keys", nil, admin())
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	k := r.obj()
	requireKeys(t, k, "id", "name", "apiKey", "createdAt", "lastUsedAt", "expiresAt")
	require.Nil(t, k["expiresAt"])
	require.Equal(t, "default", k["name"])
	key := k["apiKey"].(string)
	require.Regexp(t, `^om_[A-Za-z0-9]{32}$`, key)
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))

	requireError(t, e.do("GET", "/api/v1/sms-senders", nil, withKey(key)), http.StatusServiceUnavailable, "Service Unavailable", "")
	r = e.do("POST", "/admin/v1/companies/"+id+"/activate", nil, admin())
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	require.Equal(t, map[string]any{"id": id, "name": "Globex", "active": true, "createdAt": c["createdAt"], "maxPerSecond": 0.0}, r.obj())
	require.Equal(t, http.StatusOK, e.do("GET", "/api/v1/sms-senders", nil, withKey(key)).Code)

	r = e.do("POST", "/admin/v1/companies/"+id+"/sms-senders", map[string]any{"senderId": "GLOBEX"}, admin())
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	sd := r.obj()
	requireKeys(t, sd, "id", "senderId", "approved")
	require.Equal(t, "GLOBEX", sd["senderId"])
	require.Equal(t, false, sd["approved"])
	sid := sd["id"].(float64)
	require.Equal(t, []any{}, e.do("GET", "/api/v1/sms-senders", nil, withKey(key)).arr(), "not approved yet")

	r = e.do("POST", "/admin/v1/companies/"+id+"/sms-senders/"+ftoa(sid)+"/approve", nil, admin())
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	require.Equal(t, map[string]any{"id": sid, "senderId": "GLOBEX", "approved": true}, r.obj())
	require.Equal(t, []any{map[string]any{"id": sid, "senderId": "GLOBEX"}}, e.do("GET", "/api/v1/sms-senders", nil, withKey(key)).arr())

	r = e.do("POST", "/admin/v1/companies/"+id+"/sms-senders", map[string]any{"senderId": "GLOBEX2"}, admin())
	sid2 := r.obj()["id"].(float64)
	r = e.do("POST", "/admin/v1/sms-senders/"+ftoa(sid2)+"/approve", nil, admin())
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	ap := r.obj()
	require.Equal(t, map[string]any{"id": sid2, "senderId": "GLOBEX2", "approved": true}, ap, "the operator's approve answers the whole sender")
	require.Len(t, e.do("GET", "/api/v1/sms-senders", nil, withKey(key)).arr(), 2)

	r = e.do("POST", "/admin/v1/companies/"+id+"/chat-services", map[string]any{"brandName": "Globex", "providerServiceId": "pv-77"}, admin())
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	cs := r.obj()
	requireKeys(t, cs, "id", "brandName", "providerServiceId", "provider", "channel", "baseUrl", "credentialsSet", "createdAt")
	require.Equal(t, "pv-77", cs["providerServiceId"])
	require.Equal(t, "herald", cs["provider"], "the default provider")
	require.Equal(t, "viber", cs["channel"], "the default channel")
	require.Equal(t, false, cs["credentialsSet"])
	require.Equal(t, []any{map[string]any{"id": cs["id"], "brandName": "Globex", "channel": "viber", "provider": "herald"}}, e.do("GET", "/api/v1/chat-services", nil, withKey(key)).arr())

	// A new key with a grace works beside the first (a rotation without
	// downtime); revoking the first leaves the new one.
	r = e.do("POST", "/admin/v1/companies/"+id+"/api-keys", map[string]any{"name": "rotated", "previousKeysExpireIn": 3600}, admin())
	require.Equal(t, http.StatusCreated, r.Code)
	key2 := r.obj()["apiKey"].(string)
	require.Equal(t, http.StatusOK, e.do("GET", "/api/v1/sms-senders", nil, withKey(key)).Code)
	require.Equal(t, http.StatusOK, e.do("GET", "/api/v1/sms-senders", nil, withKey(key2)).Code)
	keys := e.do("GET", "/admin/v1/companies/"+id+"/api-keys", nil, admin()).arr()
	require.Len(t, keys, 2)
	first := keys[0].(map[string]any)
	require.Equal(t, k["id"], first["id"])
	require.NotContains(t, first, "apiKey", "a key is shown once")
	require.NotNil(t, first["lastUsedAt"], "the key's use is recorded")
	require.NotNil(t, first["expiresAt"], "the first key is in its grace")
	require.Equal(t, http.StatusNoContent, e.do("DELETE", "/admin/v1/companies/"+id+"/api-keys/"+ftoa(first["id"].(float64)), nil, admin()).Code)
	requireError(t, e.do("GET", "/api/v1/sms-senders", nil, withKey(key)), http.StatusUnauthorized, "Unauthorized", "")
	require.Equal(t, http.StatusOK, e.do("GET", "/api/v1/sms-senders", nil, withKey(key2)).Code)
	require.Len(t, e.do("GET", "/admin/v1/companies/"+id+"/api-keys", nil, admin()).arr(), 1)

	r = e.do("POST", "/admin/v1/companies/"+id+"/deactivate", nil, admin())
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, false, r.obj()["active"])
}

// TestAdminWhoAmI: the operator's sign-in checks the token with GET
// /admin/v1/whoami: 200 with the role and the server's version, 401
// without the right token.
func TestAdminWhoAmI(t *testing.T) {
	e := newEnv(t, func(c *envConfig) { c.tune = func(sc *server.Config) { sc.Version = "v1.2.3" } })
	r := e.do("GET", "/admin/v1/whoami", nil, admin())
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	require.Equal(t, map[string]any{"role": "operator", "version": "v1.2.3", "routing": true}, r.obj())
	requireError(t, e.do("GET", "/admin/v1/whoami", nil, withHeader("Authorization", "Bearer wrong")), http.StatusUnauthorized, "Unauthorized", "")
	requireError(t, e.do("GET", "/admin/v1/whoami", nil), http.StatusUnauthorized, "Unauthorized", "")
}

// TestAdminKeyRotation: a new key revokes the company's other keys at
// once, or after the grace previousKeysExpireIn gives them (listed as
// expiresAt); a grace out of range is a 400 naming the field and changes
// nothing; keys in their grace count towards the 20 a company may have.
func TestAdminKeyRotation(t *testing.T) {
	clk := &clock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	e := newEnv(t, withClock(clk))
	id := e.do("POST", "/admin/v1/companies", map[string]any{"name": "Globex"}, admin()).obj()["id"].(string)
	require.Equal(t, http.StatusOK, e.do("POST", "/admin/v1/companies/"+id+"/activate", nil, admin()).Code)
	newKey := func(body any) string {
		t.Helper()
		r := e.do("POST", "/admin/v1/companies/"+id+"/api-keys", body, admin())
		require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
		require.Nil(t, r.obj()["expiresAt"], "a new key does not expire")
		return r.obj()["apiKey"].(string)
	}
	works := func(key string) int { return e.do("GET", "/api/v1/sms-senders", nil, withKey(key)).Code }
	list := func() []any { return e.do("GET", "/admin/v1/companies/"+id+"/api-keys", nil, admin()).arr() }

	k1 := newKey(nil)
	k2 := newKey(map[string]any{"name": "second"})
	require.Equal(t, http.StatusUnauthorized, works(k1), "a new key revokes the previous one at once")
	require.Equal(t, http.StatusOK, works(k2))
	k3 := newKey(map[string]any{"name": "third", "previousKeysExpireIn": 0})
	require.Equal(t, http.StatusUnauthorized, works(k2), "0 is at once")
	require.Len(t, list(), 1)

	for _, bad := range []any{
		map[string]any{"previousKeysExpireIn": -1},
		map[string]any{"previousKeysExpireIn": 604801},
		map[string]any{"previousKeysExpireIn": 1 << 62},
		map[string]any{"previousKeysExpireIn": 1.5},
		map[string]any{"previousKeysExpireIn": "1h"},
	} {
		requireError(t, e.do("POST", "/admin/v1/companies/"+id+"/api-keys", bad, admin()), http.StatusBadRequest, "Bad Request", "previousKeysExpireIn")
	}
	require.Equal(t, http.StatusOK, works(k3), "a refused key changes nothing")
	require.Len(t, list(), 1)

	k4 := newKey(map[string]any{"name": "fourth", "previousKeysExpireIn": 604800})
	require.Equal(t, http.StatusOK, works(k3), "the previous key works during its grace")
	require.Equal(t, http.StatusOK, works(k4))
	keys := list()
	require.Len(t, keys, 2)
	require.Equal(t, "2026-03-09T09:00:00.000Z", keys[0].(map[string]any)["expiresAt"])
	require.Nil(t, keys[1].(map[string]any)["expiresAt"])

	clk.t = clk.t.Add(7*24*time.Hour - time.Second)
	require.Equal(t, http.StatusOK, works(k3))
	clk.t = clk.t.Add(time.Second)
	requireError(t, e.do("GET", "/api/v1/sms-senders", nil, withKey(k3)), http.StatusUnauthorized, "Unauthorized", "")
	require.Len(t, list(), 1, "an expired key is not listed")

	// Keys in their grace count towards the 20; a key without a grace
	// always fits.
	for i := range 19 {
		newKey(map[string]any{"name": fmt.Sprintf("k%d", i), "previousKeysExpireIn": 3600})
	}
	require.Len(t, list(), 20)
	requireError(t, e.do("POST", "/admin/v1/companies/"+id+"/api-keys", map[string]any{"previousKeysExpireIn": 3600}, admin()), http.StatusConflict, "Conflict", "")
	require.Len(t, list(), 20, "nothing changed")
	last := newKey(nil)
	require.Len(t, list(), 1)
	require.Equal(t, http.StatusOK, works(last))
	require.Equal(t, http.StatusUnauthorized, works(k4))
}

// TestAdminCompanyRate: a company's rate is set, read back and removed
// through the admin API; a negative, missing or huge one is a 400 naming
// maxPerSecond, an unknown company a 404, and nothing changes on errors.
func TestAdminCompanyRate(t *testing.T) {
	e := newEnv(t)
	id := e.do("POST", "/admin/v1/companies", map[string]any{"name": "Globex"}, admin()).obj()["id"].(string)
	r := e.do("PUT", "/admin/v1/companies/"+id+"/rate-limit", map[string]any{"maxPerSecond": 40}, admin())
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	got := r.obj()
	require.NotEmpty(t, got["createdAt"])
	delete(got, "createdAt")
	require.Equal(t, map[string]any{"id": id, "name": "Globex", "active": false, "maxPerSecond": 40.0}, got)
	r = e.do("GET", "/admin/v1/companies/"+id, nil, admin())
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	require.Equal(t, 40.0, r.obj()["maxPerSecond"])

	for _, body := range []any{map[string]any{"maxPerSecond": -1}, map[string]any{}, map[string]any{"maxPerSecond": 1e6}, `{"maxPerSecond":"fast"}`} {
		r = e.do("PUT", "/admin/v1/companies/"+id+"/rate-limit", body, admin())
		require.Equal(t, http.StatusBadRequest, r.Code, "%v: %s", body, r.Body)
	}
	requireError(t, e.do("PUT", "/admin/v1/companies/"+id+"/rate-limit", map[string]any{"maxPerSecond": -1}, admin()),
		http.StatusBadRequest, "Bad Request", "maxPerSecond")
	require.Equal(t, 40.0, e.do("GET", "/admin/v1/companies/"+id, nil, admin()).obj()["maxPerSecond"], "errors change nothing")
	missing := "0190f5c0-0000-7000-8000-000000000000"
	require.Equal(t, http.StatusNotFound, e.do("PUT", "/admin/v1/companies/"+missing+"/rate-limit", map[string]any{"maxPerSecond": 1}, admin()).Code)
	require.Equal(t, http.StatusNotFound, e.do("GET", "/admin/v1/companies/"+missing, nil, admin()).Code)
	require.Equal(t, http.StatusUnauthorized, e.do("GET", "/admin/v1/companies/"+id, nil).Code)

	r = e.do("PUT", "/admin/v1/companies/"+id+"/rate-limit", map[string]any{"maxPerSecond": 0}, admin())
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, 0.0, r.obj()["maxPerSecond"], "0 removes the limit")
}

// TestAdminReads: the operator lists companies (by name, paged), a
// company's senders (approved or not) and chat services; company names
// are unique whatever the case; a request without the token is a 401
// whatever its path or method, before a 404 or a 405.
func TestAdminReads(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"zeta", "Alpha", "mu"} {
		require.Equal(t, http.StatusCreated, e.do("POST", "/admin/v1/companies", map[string]any{"name": n}, admin()).Code)
	}
	requireError(t, e.do("POST", "/admin/v1/companies", map[string]any{"name": " ALPHA "}, admin()), http.StatusConflict, "Conflict", "")
	all := e.do("GET", "/admin/v1/companies?pageSize=100", nil, admin()).obj()
	var names []string
	for _, c := range all["companies"].([]any) {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	require.Subset(t, names, []string{"Alpha", "mu", "zeta"})
	require.Equal(t, float64(len(names)), all["totalCount"])
	require.Equal(t, 1, strings.Count(strings.Join(names, ","), "Alpha"), "no second Alpha")
	for i := 1; i < len(names); i++ {
		require.LessOrEqual(t, strings.ToLower(names[i-1]), strings.ToLower(names[i]), "by name")
	}
	page2 := e.do("GET", "/admin/v1/companies?page=2&pageSize=2", nil, admin()).obj()
	require.Equal(t, names[2:min(4, len(names))], func() (out []string) {
		for _, c := range page2["companies"].([]any) {
			out = append(out, c.(map[string]any)["name"].(string))
		}
		return out
	}())

	co := e.do("POST", "/admin/v1/companies", map[string]any{"name": "Senders"}, admin()).obj()["id"].(string)
	a := e.do("POST", "/admin/v1/companies/"+co+"/sms-senders", map[string]any{"senderId": "AAA"}, admin()).obj()["id"].(float64)
	e.do("POST", "/admin/v1/companies/"+co+"/sms-senders", map[string]any{"senderId": "BBB"}, admin())
	e.do("POST", "/admin/v1/sms-senders/"+ftoa(a)+"/approve", nil, admin())
	senders := e.do("GET", "/admin/v1/companies/"+co+"/sms-senders", nil, admin()).arr()
	require.Len(t, senders, 2)
	require.Equal(t, true, senders[0].(map[string]any)["approved"])
	require.Equal(t, false, senders[1].(map[string]any)["approved"], "unapproved ones too")
	e.do("POST", "/admin/v1/companies/"+co+"/chat-services", map[string]any{"brandName": "S", "providerServiceId": "s-1"}, admin())
	services := e.do("GET", "/admin/v1/companies/"+co+"/chat-services", nil, admin()).arr()
	require.Len(t, services, 1)
	require.Equal(t, "s-1", services[0].(map[string]any)["providerServiceId"])

	missing := "0190f5c0-0000-7000-8000-000000000000"
	for _, path := range []string{"/sms-senders", "/chat-services", "/api-keys"} {
		require.Equal(t, http.StatusNotFound, e.do("GET", "/admin/v1/companies/"+missing+path, nil, admin()).Code, path)
	}

	// Without the token: 401 before anything else.
	for _, c := range []struct{ method, path string }{
		{"GET", "/admin/v1/companies"}, {"GET", "/admin/v1/nowhere"}, {"PATCH", "/admin/v1/companies"},
		{"GET", "/admin/v1/companies/" + co + "/activate"}, {"DELETE", "/admin/v1/companies/" + co},
	} {
		r := e.do(c.method, c.path, nil)
		require.Equal(t, http.StatusUnauthorized, r.Code, "%s %s: %s", c.method, c.path, r.Body)
		require.Equal(t, `Bearer realm="herald-admin"`, r.Header.Get("WWW-Authenticate"))
	}
	require.Equal(t, http.StatusNotFound, e.do("GET", "/admin/v1/nowhere", nil, admin()).Code)
	require.Equal(t, http.StatusMethodNotAllowed, e.do("GET", "/admin/v1/companies/"+co+"/activate", nil, admin()).Code)
}

func TestAdminErrors(t *testing.T) {
	e := newEnv(t)
	other := e.newCompany(t, "Other")
	missing := "0190f5c0-0000-7000-8000-000000000000"
	cases := []struct {
		name, path string
		body       any
		opt        reqOpt
		status     int
		error      string
		field      string
	}{
		{"no token", "/admin/v1/companies", map[string]any{"name": "x"}, func(*http.Request) {}, 401, "Unauthorized", ""},
		{"wrong token", "/admin/v1/companies", map[string]any{"name": "x"}, withHeader("Authorization", "Bearer nope"), 401, "Unauthorized", ""},
		{"token with another scheme", "/admin/v1/companies", map[string]any{"name": "x"}, withHeader("Authorization", "Basic "+adminToken), 401, "Unauthorized", ""},
		{"api key is not an admin token", "/admin/v1/companies", map[string]any{"name": "x"}, withHeader("Authorization", "Bearer "+e.key), 401, "Unauthorized", ""},
		{"company name missing", "/admin/v1/companies", map[string]any{}, admin(), 400, "Bad Request", "name"},
		{"malformed JSON", "/admin/v1/companies", `{"name":`, admin(), 400, "Bad Request", ""},
		{"activate unknown company", "/admin/v1/companies/" + missing + "/activate", nil, admin(), 404, "Not Found", ""},
		{"activate bad id", "/admin/v1/companies/x/activate", nil, admin(), 400, "Bad Request", "id"},
		{"key for unknown company", "/admin/v1/companies/" + missing + "/api-keys", nil, admin(), 404, "Not Found", ""},
		{"sender for unknown company", "/admin/v1/companies/" + missing + "/sms-senders", map[string]any{"senderId": "X"}, admin(), 404, "Not Found", ""},
		{"sender name too long", "/admin/v1/companies/" + other.id.String() + "/sms-senders", map[string]any{"senderId": strings.Repeat("A", 12)}, admin(), 400, "Bad Request", "senderId"},
		{"approve unknown sender", "/admin/v1/sms-senders/9999/approve", nil, admin(), 404, "Not Found", ""},
		{"approve bad sender id", "/admin/v1/sms-senders/abc/approve", nil, admin(), 400, "Bad Request", "smsSenderId"},
		{"approve another company's sender", "/admin/v1/companies/" + e.id.String() + "/sms-senders/" + ftoa(float64(other.sender)) + "/approve", nil, admin(), 404, "Not Found", ""},
		{"chat service without provider id", "/admin/v1/companies/" + other.id.String() + "/chat-services", map[string]any{"brandName": "B"}, admin(), 400, "Bad Request", "providerServiceId"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.doT(t, "POST", c.path, c.body, c.opt)
			requireError(t, r, c.status, c.error, c.field)
			if c.status == http.StatusUnauthorized {
				require.Contains(t, r.Header.Get("WWW-Authenticate"), "Bearer")
			}
		})
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
