package storetest

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

// testCompanies: companies round-trip, the active flag switches, unknown
// ids are NotFound.
func testCompanies(f *fixture) {
	t := f.t
	inactive := messaging.Company{ID: f.id(), Name: "Acme Café", CreatedAt: base.Add(123456 * time.Microsecond)}
	active := messaging.Company{ID: f.id(), Name: "Globex", Active: true, CreatedAt: at(60)}
	require.NoError(t, f.s.CreateCompany(f.ctx, &inactive))
	require.NoError(t, f.s.CreateCompany(f.ctx, &active))

	for _, want := range []messaging.Company{inactive, active} {
		got, err := f.s.GetCompany(f.ctx, want.ID)
		require.NoError(t, err)
		requireSame(t, want, got)
	}
	_, err := f.s.GetCompany(f.ctx, f.id())
	requireNotFound(t, err)

	require.NoError(t, f.s.SetCompanyActive(f.ctx, inactive.ID, true))
	got, err := f.s.GetCompany(f.ctx, inactive.ID)
	require.NoError(t, err)
	require.True(t, got.Active)
	require.NoError(t, f.s.SetCompanyActive(f.ctx, active.ID, false))
	got, err = f.s.GetCompany(f.ctx, active.ID)
	require.NoError(t, err)
	require.False(t, got.Active)
	got, err = f.s.GetCompany(f.ctx, inactive.ID)
	require.NoError(t, err)
	require.True(t, got.Active, "switching one company must not touch another")

	requireNotFound(t, f.s.SetCompanyActive(f.ctx, f.id(), true))
}

// testAPIKeys: a company has several keys (each new one giving the
// others a long grace), each found by its selector with its hash; a
// selector is taken once across companies; a company has max keys at
// most; a revoked key stops working and its selector is free again; the
// last use is recorded; the store keeps its own copy of the hash; unknown
// companies and keys are NotFound.
func testAPIKeys(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	h1, h2, h3 := hash("om_key1"), hash("om_key2"), hash("om_key3")
	find := func(selector string) (messaging.Company, messaging.APIKey, []byte, error) {
		return f.s.CompanyByAPIKeySelector(f.ctx, selector)
	}
	create := func(company messaging.ID, name, selector string, h []byte, max int) (messaging.APIKey, error) {
		k := messaging.APIKey{CompanyID: company, Name: name, CreatedAt: at(int(f.phone))}
		f.phone++
		err := f.s.CreateAPIKey(f.ctx, &k, selector, h, max, at(1_000_000))
		return k, err
	}

	_, _, _, err := find("sel1")
	requireNotFound(t, err)
	_, _, _, err = find("")
	requireNotFound(t, err)

	k1, err := create(a.ID, "production", "sel1", h1, 3)
	require.NoError(t, err)
	require.Positive(t, k1.ID)
	h2copy := append([]byte(nil), h2...)
	k2, err := create(a.ID, "ci", "sel2", h2, 3)
	require.NoError(t, err)
	h2[0] ^= 0xff // the caller's slice is not the store's
	require.Greater(t, k2.ID, k1.ID)
	kb, err := create(b.ID, "default", "selB", h3, 3)
	require.NoError(t, err)

	got, key, gotHash, err := find("sel1")
	require.NoError(t, err)
	requireSame(t, a, got)
	require.Equal(t, h1, gotHash)
	require.Equal(t, k1.ID, key.ID)
	require.Equal(t, "production", key.Name)
	require.Equal(t, a.ID, key.CompanyID)
	require.Nil(t, key.LastUsedAt)
	got, _, gotHash, err = find("sel2")
	require.NoError(t, err)
	require.Equal(t, a.ID, got.ID, "both keys of A work")
	require.Equal(t, h2copy, gotHash)
	_, _, _, err = find("SEL1")
	requireNotFound(t, err, "selectors are compared exactly")

	// A selector any key holds is a Conflict and changes nothing; so is a
	// key beyond the most a company may have.
	_, err = create(b.ID, "x", "sel1", h3, 3)
	requireCode(t, err, messaging.Conflict)
	_, err = create(a.ID, "third", "sel3", h3, 2)
	requireCode(t, err, messaging.Conflict)
	_, _, _, err = find("sel3")
	requireNotFound(t, err)
	_, err = create(f.id(), "x", "sel4", h3, 3)
	requireNotFound(t, err)

	keys, err := f.s.ListAPIKeys(f.ctx, a.ID)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.Equal(t, []int64{k1.ID, k2.ID}, []int64{keys[0].ID, keys[1].ID}, "oldest first")
	require.Equal(t, []string{"production", "ci"}, []string{keys[0].Name, keys[1].Name})
	require.True(t, k1.CreatedAt.Equal(keys[0].CreatedAt))
	keys, err = f.s.ListAPIKeys(f.ctx, f.id())
	require.NoError(t, err)
	require.Empty(t, keys)

	require.NoError(t, f.s.TouchAPIKey(f.ctx, k2.ID, at(500)))
	_, key, _, err = find("sel2")
	require.NoError(t, err)
	require.NotNil(t, key.LastUsedAt)
	require.True(t, at(500).Equal(*key.LastUsedAt))

	// Revoking one key leaves the others; another company's key id is
	// NotFound.
	requireNotFound(t, f.s.RevokeAPIKey(f.ctx, b.ID, k1.ID))
	require.NoError(t, f.s.RevokeAPIKey(f.ctx, a.ID, k1.ID))
	requireNotFound(t, f.s.RevokeAPIKey(f.ctx, a.ID, k1.ID))
	_, _, _, err = find("sel1")
	requireNotFound(t, err, "a revoked key stops working")
	got, _, _, err = find("sel2")
	require.NoError(t, err)
	require.Equal(t, a.ID, got.ID)
	got, _, _, err = find("selB")
	require.NoError(t, err)
	require.Equal(t, b.ID, got.ID, "another company's key is untouched")
	_, err = create(b.ID, "again", "sel1", h1, 3)
	require.NoError(t, err, "a revoked key's selector can be taken again")
	keys, err = f.s.ListAPIKeys(f.ctx, b.ID)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.Equal(t, kb.ID, keys[0].ID)

	// The company found carries its current state.
	require.NoError(t, f.s.SetCompanyActive(f.ctx, b.ID, false))
	got, _, _, err = find("sel1")
	require.NoError(t, err)
	require.False(t, got.Active)
}

// testAPIKeyRotation: a new key revokes the company's other keys at
// once, or gives them a grace (never longer than the one they have);
// expired keys are removed by the next key and do not count towards the
// most a company may have; another company's keys are untouched.
func testAPIKeyRotation(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	n := 0
	create := func(company messaging.ID, now, othersExpireAt time.Time, max int) (messaging.APIKey, string, error) {
		n++
		sel := fmt.Sprintf("rot%d", n)
		k := messaging.APIKey{CompanyID: company, Name: sel, CreatedAt: now}
		err := f.s.CreateAPIKey(f.ctx, &k, sel, hash("om_"+sel), max, othersExpireAt)
		return k, sel, err
	}
	expiry := func(sel string) *time.Time {
		t.Helper()
		_, k, _, err := f.s.CompanyByAPIKeySelector(f.ctx, sel)
		require.NoError(t, err)
		return k.ExpiresAt
	}
	ids := func(company messaging.ID) []int64 {
		t.Helper()
		ks, err := f.s.ListAPIKeys(f.ctx, company)
		require.NoError(t, err)
		var out []int64
		for _, k := range ks {
			out = append(out, k.ID)
		}
		return out
	}

	_, selB, err := create(b.ID, at(0), at(0), 20)
	require.NoError(t, err)
	_, sel1, err := create(a.ID, at(0), at(0), 20)
	require.NoError(t, err)
	require.Nil(t, expiry(sel1), "a first key does not expire")

	// A grace: the previous key expires then, the new one never.
	_, sel2, err := create(a.ID, at(10), at(3610), 20)
	require.NoError(t, err)
	require.NotNil(t, expiry(sel1))
	require.True(t, at(3610).Equal(*expiry(sel1)), "%v", expiry(sel1))
	require.Nil(t, expiry(sel2))
	keys, err := f.s.ListAPIKeys(f.ctx, a.ID)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.NotNil(t, keys[0].ExpiresAt, "listing shows the expiry")
	require.True(t, at(3610).Equal(*keys[0].ExpiresAt))
	require.Nil(t, keys[1].ExpiresAt)

	// A longer grace later does not lengthen one given before; a
	// shorter one shortens it.
	_, sel3, err := create(a.ID, at(20), at(7200), 20)
	require.NoError(t, err)
	require.True(t, at(3610).Equal(*expiry(sel1)), "never longer than the grace it had")
	require.True(t, at(7200).Equal(*expiry(sel2)))
	_, sel4, err := create(a.ID, at(30), at(100), 20)
	require.NoError(t, err)
	require.True(t, at(100).Equal(*expiry(sel1)))
	require.True(t, at(100).Equal(*expiry(sel2)))
	require.True(t, at(100).Equal(*expiry(sel3)))
	require.Len(t, ids(a.ID), 4)

	// The keys in their grace count towards the most a company may have;
	// once expired, they count no more and the next key removes them.
	_, _, err = create(a.ID, at(40), at(200), 4)
	requireCode(t, err, messaging.Conflict)
	require.Len(t, ids(a.ID), 4, "nothing changed")
	require.True(t, at(100).Equal(*expiry(sel1)), "nothing changed")
	_, sel5, err := create(a.ID, at(100), at(200), 2)
	require.NoError(t, err)
	require.Len(t, ids(a.ID), 2, "the expired keys are gone")
	for _, sel := range []string{sel1, sel2, sel3} {
		_, _, _, err := f.s.CompanyByAPIKeySelector(f.ctx, sel)
		requireNotFound(t, err)
	}
	require.True(t, at(200).Equal(*expiry(sel4)))

	// No grace: every other key is revoked at once, and the new one
	// always fits.
	k6, _, err := create(a.ID, at(150), at(150), 1)
	require.NoError(t, err)
	require.Equal(t, []int64{k6.ID}, ids(a.ID))
	_, _, _, err = f.s.CompanyByAPIKeySelector(f.ctx, sel5)
	requireNotFound(t, err)
	_, _, _, err = f.s.CompanyByAPIKeySelector(f.ctx, selB)
	require.NoError(t, err, "another company's key is untouched")
	require.Len(t, ids(b.ID), 1)
}

// testCompanyNames: names are unique, compared trimmed and case-blind;
// companies are listed by name, a page at a time.
func testCompanyNames(f *fixture) {
	t := f.t
	names := []string{"beta", "Alpha", "gamma", "Delta"}
	for _, n := range names {
		f.company(n)
	}
	dup := messaging.Company{ID: f.id(), Name: "ALPHA", CreatedAt: base}
	requireCode(t, f.s.CreateCompany(f.ctx, &dup), messaging.Conflict)
	_, err := f.s.GetCompany(f.ctx, dup.ID)
	requireNotFound(t, err, "nothing stored")

	page1, total, err := f.s.ListCompanies(f.ctx, messaging.PageRequest{Page: 1, PageSize: 3})
	require.NoError(t, err)
	require.Equal(t, 4, total)
	page2, _, err := f.s.ListCompanies(f.ctx, messaging.PageRequest{Page: 2, PageSize: 3})
	require.NoError(t, err)
	var got []string
	for _, c := range append(page1, page2...) {
		got = append(got, c.Name)
	}
	require.Equal(t, []string{"Alpha", "beta", "Delta", "gamma"}, got, "by name, case-blind")
	page3, _, err := f.s.ListCompanies(f.ctx, messaging.PageRequest{Page: 3, PageSize: 3})
	require.NoError(t, err)
	require.Empty(t, page3)
}

// testSMSSenders: increasing ids, approval, approvedOnly lists, tenant
// isolation.
func testSMSSenders(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	s1 := messaging.SMSSender{CompanyID: a.ID, SenderID: "HERALD", CreatedAt: at(1)}
	s2 := messaging.SMSSender{CompanyID: a.ID, SenderID: "PROMO", CreatedAt: at(2)}
	s3 := messaging.SMSSender{CompanyID: b.ID, SenderID: "OTHER", CreatedAt: at(3)}
	for _, s := range []*messaging.SMSSender{&s1, &s2, &s3} {
		require.NoError(t, f.s.CreateSMSSender(f.ctx, s))
	}
	require.Positive(t, s1.ID)
	require.Greater(t, s2.ID, s1.ID)
	require.Greater(t, s3.ID, s2.ID)

	got, err := f.s.GetSMSSender(f.ctx, a.ID, s1.ID)
	require.NoError(t, err)
	requireSame(t, s1, got)
	_, err = f.s.GetSMSSender(f.ctx, b.ID, s1.ID)
	requireNotFound(t, err, "another company's sender")
	_, err = f.s.GetSMSSender(f.ctx, a.ID, s3.ID+1000)
	requireNotFound(t, err)
	for _, want := range []messaging.SMSSender{s1, s3} {
		got, err := f.s.SMSSenderByID(f.ctx, want.ID)
		require.NoError(t, err, "any company's sender, by id alone")
		requireSame(t, want, got)
	}
	_, err = f.s.SMSSenderByID(f.ctx, s3.ID+1000)
	requireNotFound(t, err)

	list, err := f.s.ListSMSSenders(f.ctx, a.ID, false)
	require.NoError(t, err)
	requireSameList(t, []messaging.SMSSender{s1, s2}, list)
	list, err = f.s.ListSMSSenders(f.ctx, a.ID, true)
	require.NoError(t, err)
	require.Empty(t, list, "no sender is approved yet")

	require.NoError(t, f.s.ApproveSMSSender(f.ctx, s2.ID))
	s2.Approved = true
	got, err = f.s.GetSMSSender(f.ctx, a.ID, s2.ID)
	require.NoError(t, err)
	requireSame(t, s2, got)
	list, err = f.s.ListSMSSenders(f.ctx, a.ID, true)
	require.NoError(t, err)
	requireSameList(t, []messaging.SMSSender{s2}, list)
	list, err = f.s.ListSMSSenders(f.ctx, a.ID, false)
	require.NoError(t, err)
	requireSameList(t, []messaging.SMSSender{s1, s2}, list)

	list, err = f.s.ListSMSSenders(f.ctx, b.ID, true)
	require.NoError(t, err)
	require.Empty(t, list)
	list, err = f.s.ListSMSSenders(f.ctx, b.ID, false)
	require.NoError(t, err)
	requireSameList(t, []messaging.SMSSender{s3}, list)

	requireNotFound(t, f.s.ApproveSMSSender(f.ctx, s3.ID+1000))
}

// testChatServices: increasing ids, lists by id, tenant isolation.
func testChatServices(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	c1 := messaging.ChatService{CompanyID: a.ID, BrandName: "Herald Café", ProviderServiceID: "svc-1", CreatedAt: at(1)}
	c2 := messaging.ChatService{CompanyID: b.ID, BrandName: "Globex", ProviderServiceID: "svc-2", CreatedAt: at(2)}
	c3 := messaging.ChatService{CompanyID: a.ID, BrandName: "Herald News", ProviderServiceID: "svc-3", CreatedAt: at(3)}
	for _, c := range []*messaging.ChatService{&c1, &c2, &c3} {
		require.NoError(t, f.s.CreateChatService(f.ctx, c))
	}
	require.Positive(t, c1.ID)
	require.Greater(t, c2.ID, c1.ID)
	require.Greater(t, c3.ID, c2.ID)

	got, err := f.s.GetChatService(f.ctx, a.ID, c3.ID)
	require.NoError(t, err)
	requireSame(t, c3, got)
	_, err = f.s.GetChatService(f.ctx, b.ID, c1.ID)
	requireNotFound(t, err, "another company's chat service")
	_, err = f.s.GetChatService(f.ctx, a.ID, c3.ID+1000)
	requireNotFound(t, err)

	list, err := f.s.ListChatServices(f.ctx, a.ID)
	require.NoError(t, err)
	requireSameList(t, []messaging.ChatService{c1, c3}, list)
	list, err = f.s.ListChatServices(f.ctx, b.ID)
	require.NoError(t, err)
	requireSameList(t, []messaging.ChatService{c2}, list)
	list, err = f.s.ListChatServices(f.ctx, f.id())
	require.NoError(t, err)
	require.Empty(t, list)

	got, err = f.s.ChatServiceByProviderID(f.ctx, "svc-2")
	require.NoError(t, err)
	requireSame(t, c2, got)
	dup := messaging.ChatService{CompanyID: b.ID, BrandName: "Copy", ProviderServiceID: "svc-1", CreatedAt: at(4)}
	require.NoError(t, f.s.CreateChatService(f.ctx, &dup))
	got, err = f.s.ChatServiceByProviderID(f.ctx, "svc-1")
	require.NoError(t, err)
	requireSame(t, c1, got, "the first registered")
	_, err = f.s.ChatServiceByProviderID(f.ctx, "svc-9")
	requireNotFound(t, err)
}

// testChatServiceProviders: a service's provider, channel and endpoint
// are kept (the defaults when empty); its credentials are returned by
// ChatServices only, other reads telling that they are set; an update
// keeps, replaces or removes them and stays within its company.
func testChatServiceProviders(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	creds := json.RawMessage(`{"apiKey":"k-1","apiSecret":"s-1"}`)
	wa := messaging.ChatService{CompanyID: a.ID, BrandName: "Acme WhatsApp", ProviderServiceID: "15550001",
		Provider: "meta-whatsapp", Channel: "whatsapp", BaseURL: "https://graph.example.test/v21.0",
		Credentials: creds, CreatedAt: at(1)}
	plain := messaging.ChatService{CompanyID: b.ID, BrandName: "Globex", ProviderServiceID: "svc-2", CreatedAt: at(2)}
	require.NoError(t, f.s.CreateChatService(f.ctx, &wa))
	require.NoError(t, f.s.CreateChatService(f.ctx, &plain))
	require.True(t, wa.CredentialsSet)
	require.Equal(t, messaging.DefaultChatProvider, plain.Provider, "an empty provider is the default")
	require.Equal(t, messaging.DefaultChatChannel, plain.Channel, "an empty channel is the default")
	require.False(t, plain.CredentialsSet)

	got, err := f.s.GetChatService(f.ctx, a.ID, wa.ID)
	require.NoError(t, err)
	want := wa
	want.Credentials = nil
	requireSame(t, want, got, "a read without the credentials")
	list, err := f.s.ListChatServices(f.ctx, a.ID)
	require.NoError(t, err)
	requireSameList(t, []messaging.ChatService{want}, list)

	all, err := f.s.ChatServices(f.ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, []int64{wa.ID, plain.ID}, []int64{all[0].ID, all[1].ID}, "by id")
	require.JSONEq(t, string(creds), string(all[0].Credentials))
	require.Equal(t, "meta-whatsapp", all[0].Provider)
	require.Equal(t, "https://graph.example.test/v21.0", all[0].BaseURL)
	require.Empty(t, all[1].Credentials)

	// An update keeping the credentials changes the rest only.
	upd := messaging.ChatService{ID: wa.ID, CompanyID: a.ID, BrandName: "Acme", ProviderServiceID: "15550002",
		Provider: "meta-whatsapp", Channel: "whatsapp"}
	require.NoError(t, f.s.UpdateChatService(f.ctx, &upd, true))
	require.True(t, upd.CredentialsSet)
	require.True(t, upd.CreatedAt.Equal(at(1)), "CreatedAt stays: %v", upd.CreatedAt)
	all, err = f.s.ChatServices(f.ctx)
	require.NoError(t, err)
	require.Equal(t, "Acme", all[0].BrandName)
	require.Equal(t, "15550002", all[0].ProviderServiceID)
	require.Empty(t, all[0].BaseURL)
	require.JSONEq(t, string(creds), string(all[0].Credentials), "kept")

	// Replaced, then removed.
	upd.Credentials = json.RawMessage(`{"accessToken":"t-2"}`)
	require.NoError(t, f.s.UpdateChatService(f.ctx, &upd, false))
	all, err = f.s.ChatServices(f.ctx)
	require.NoError(t, err)
	require.JSONEq(t, `{"accessToken":"t-2"}`, string(all[0].Credentials))
	upd.Credentials = nil
	require.NoError(t, f.s.UpdateChatService(f.ctx, &upd, false))
	require.False(t, upd.CredentialsSet)
	got, err = f.s.GetChatService(f.ctx, a.ID, wa.ID)
	require.NoError(t, err)
	require.False(t, got.CredentialsSet)
	all, err = f.s.ChatServices(f.ctx)
	require.NoError(t, err)
	require.Empty(t, all[0].Credentials)

	// Another company's service is not found, and stays as it was.
	other := messaging.ChatService{ID: plain.ID, CompanyID: a.ID, BrandName: "Taken", ProviderServiceID: "x"}
	requireNotFound(t, f.s.UpdateChatService(f.ctx, &other, true), "another company's chat service")
	got, err = f.s.GetChatService(f.ctx, b.ID, plain.ID)
	require.NoError(t, err)
	require.Equal(t, "Globex", got.BrandName)
}

// testCompanyRates: a company's rate is stored, read back with it and
// listed by CompanyRates (0 removes it), with the claimers whose
// heartbeat is recent enough.
func testCompanyRates(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	rates, procs, err := f.s.CompanyRates(f.ctx, at(0))
	require.NoError(t, err)
	require.Empty(t, rates)
	require.Zero(t, procs)

	require.NoError(t, f.s.SetCompanyRate(f.ctx, a.ID, 12.5))
	require.NoError(t, f.s.SetCompanyRate(f.ctx, b.ID, 300))
	got, err := f.s.GetCompany(f.ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, 12.5, got.MaxPerSecond)
	requireNotFound(t, f.s.SetCompanyRate(f.ctx, f.id(), 1))

	require.NoError(t, f.s.Heartbeat(f.ctx, "p1", at(10)))
	require.NoError(t, f.s.Heartbeat(f.ctx, "p2", at(20)))
	require.NoError(t, f.s.Heartbeat(f.ctx, "p3", at(5)))
	rates, procs, err = f.s.CompanyRates(f.ctx, at(10))
	require.NoError(t, err)
	require.Equal(t, map[messaging.ID]float64{a.ID: 12.5, b.ID: 300}, rates)
	require.Equal(t, 2, procs, "p1 and p2 beat at 10 or later; p3 did not")

	require.NoError(t, f.s.SetCompanyRate(f.ctx, b.ID, 0))
	rates, _, err = f.s.CompanyRates(f.ctx, at(10))
	require.NoError(t, err)
	require.Equal(t, map[messaging.ID]float64{a.ID: 12.5}, rates)
	got, err = f.s.GetCompany(f.ctx, b.ID)
	require.NoError(t, err)
	require.Zero(t, got.MaxPerSecond)
}
