package storetest

import (
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

// testAPIKeys: a key hash finds its company; a new hash revokes the old
// one; unknown hashes and companies are NotFound; the store keeps its own
// copy of the hash.
func testAPIKeys(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	h1, h2, h3 := hash("om_key1"), hash("om_key2"), hash("om_key3")
	find := func(selector string) (messaging.Company, []byte, error) {
		return f.s.CompanyByAPIKeySelector(f.ctx, selector)
	}

	_, _, err := find("sel1")
	requireNotFound(t, err)
	_, _, err = find("")
	requireNotFound(t, err)

	require.NoError(t, f.s.SetAPIKey(f.ctx, a.ID, "sel1", h1))
	require.NoError(t, f.s.SetAPIKey(f.ctx, b.ID, "sel2", h2))
	got, gotHash, err := find("sel1")
	require.NoError(t, err)
	requireSame(t, a, got)
	require.Equal(t, h1, gotHash)
	got, gotHash, err = find("sel2")
	require.NoError(t, err)
	requireSame(t, b, got)
	require.Equal(t, h2, gotHash)
	_, _, err = find("SEL1")
	requireNotFound(t, err, "selectors are compared exactly")

	// A selector another company's key holds is a Conflict and changes
	// nothing.
	requireCode(t, f.s.SetAPIKey(f.ctx, b.ID, "sel1", h3), messaging.Conflict)
	got, gotHash, err = find("sel1")
	require.NoError(t, err)
	require.Equal(t, a.ID, got.ID)
	require.Equal(t, h1, gotHash)
	got, _, err = find("sel2")
	require.NoError(t, err)
	require.Equal(t, b.ID, got.ID)

	// Replacing the key revokes the previous one.
	h3copy := append([]byte(nil), h3...)
	require.NoError(t, f.s.SetAPIKey(f.ctx, a.ID, "sel3", h3))
	h3[0] ^= 0xff // the caller's slice is not the store's
	_, _, err = find("sel1")
	requireNotFound(t, err, "the replaced key must stop working")
	got, gotHash, err = find("sel3")
	require.NoError(t, err)
	require.Equal(t, a.ID, got.ID)
	require.Equal(t, h3copy, gotHash)
	got, _, err = find("sel2")
	require.NoError(t, err)
	require.Equal(t, b.ID, got.ID, "another company's key is untouched")
	// The freed selector can be taken again.
	require.NoError(t, f.s.SetAPIKey(f.ctx, b.ID, "sel1", h1))
	got, _, err = find("sel1")
	require.NoError(t, err)
	require.Equal(t, b.ID, got.ID)

	// The company found carries its current state.
	require.NoError(t, f.s.SetCompanyActive(f.ctx, b.ID, false))
	got, _, err = find("sel1")
	require.NoError(t, err)
	require.False(t, got.Active)

	requireNotFound(t, f.s.SetAPIKey(f.ctx, f.id(), "sel4", hash("om_key4")))
	_, _, err = find("sel4")
	requireNotFound(t, err)
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
