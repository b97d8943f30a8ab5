package enginetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
	"pgregory.net/rapid"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/store/sqlstore/pgtest"
)

// LongEnv names the variable that makes the model test run many more and
// longer sequences (the chaos step of CI sets it).
const LongEnv = "HERALD_TEST_MODEL_LONG"

// TestMain bounds the model test for the ordinary suite: a few sequences
// of about 15 steps on each store, unless -rapid.checks or -rapid.steps
// (or rapid's RAPID_CHECKS and RAPID_STEPS) ask for more, or LongEnv is
// set.
func TestMain(m *testing.M) {
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	checks, steps := "2", "15"
	if os.Getenv(LongEnv) != "" {
		checks, steps = "20", "50"
	}
	if !set["rapid.checks"] && os.Getenv("RAPID_CHECKS") == "" {
		_ = flag.Set("rapid.checks", checks)
	}
	if !set["rapid.steps"] && os.Getenv("RAPID_STEPS") == "" {
		_ = flag.Set("rapid.steps", steps)
	}
	if !set["rapid.seed"] && os.Getenv("RAPID_SEED") == "" {
		// A seed of its own, printed by each store's run, so that any
		// run is replayed with -rapid.seed, a passing one too.
		var b [8]byte
		_, _ = rand.Read(b[:])
		_ = flag.Set("rapid.seed", strconv.FormatUint(binary.LittleEndian.Uint64(b[:])>>1, 10))
	}
	if !set["rapid.nofailfile"] && os.Getenv("RAPID_NOFAILFILE") == "" {
		// The seed printed replays a failure; no file is left behind.
		_ = flag.Set("rapid.nofailfile", "true")
	}
	os.Exit(m.Run())
}

// opener opens handles on the data of one sequence: each process gets
// its own (a process of its own on a database).
type opener func() (herald.Store, func(), error)

// backend makes the data of one sequence: fresh returns its opener and
// the function dropping it.
type backend struct {
	name  string
	fresh func(t *rapid.T) (opener, func())
}

func backends() []backend {
	sqlOpener := func(u string) opener {
		return func() (herald.Store, func(), error) {
			s, err := sqlstore.Open(context.Background(), u, sqlstore.Config{MaxOpenConns: 4})
			if err != nil {
				return nil, nil, fmt.Errorf("open the store: %w", err)
			}
			return s, func() { _ = s.Close() }, nil
		}
	}
	return []backend{
		{"memstore", func(*rapid.T) (opener, func()) {
			s := memstore.New()
			return func() (herald.Store, func(), error) { return s, func() {}, nil }, func() {}
		}},
		{"sqlite", func(t *rapid.T) (opener, func()) {
			dir, err := os.MkdirTemp("", "herald-model-")
			must(t, err)
			return sqlOpener("sqlite://" + filepath.Join(dir, "herald.db")), func() { _ = os.RemoveAll(dir) }
		}},
		{"postgres", func(t *rapid.T) (opener, func()) {
			u, drop := pgSchema(t)
			return sqlOpener(u), drop
		}},
	}
}

// pgSchema makes a schema of its own in the database pgtest.Env names
// and returns its URL and the function dropping it: a sequence keeps no
// connection once it ended.
func pgSchema(t *rapid.T) (string, func()) {
	base := os.Getenv(pgtest.Env)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "herald_model_" + hex.EncodeToString(b[:])
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(base)))
	_, err := admin.Exec("CREATE SCHEMA " + schema)
	_ = admin.Close()
	must(t, err)
	u, err := url.Parse(base)
	must(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), func() {
		admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(base)))
		defer admin.Close()
		_, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE")
	}
}

// TestModel runs random sequences of operations against the delivery
// engine on each store, checking its invariants after every step (see
// world.check). A failure prints the minimal sequence rapid found and the
// seed that replays it (-rapid.seed=N).
func TestModel(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			if b.name == "postgres" && os.Getenv(pgtest.Env) == "" {
				t.Skipf("needs %s", pgtest.Env)
			}
			t.Logf("seed %s: -rapid.seed=%[1]s replays this run", flag.Lookup("rapid.seed").Value)
			rapid.Check(t, func(rt *rapid.T) {
				open, drop := b.fresh(rt)
				w := newWorld(t, rt, open)
				w.backend = b.name
				defer drop()
				defer w.close(rt)
				rt.Repeat(w.actions())
				w.finish(rt)
			})
		})
	}
}

// company is one tenant of the sequence: its SMS go through connector
// conn.
type company struct {
	id       messaging.ID
	sender   int64
	template messaging.ID
	conn     string
	txn      *camp // its transactional campaign, once made
	// chatService is its chat service, of Herald's own provider.
	chatService int64
}

// stillStopped ends a stop window that no resume ended.
const stillStopped = math.MaxInt64

// camp is the model of one campaign.
type camp struct {
	id      messaging.ID
	company int
	kind    string // "bulk", "direct" or "transactional"
	// want is the status the model expects (Completed only when
	// cancelled; InProgress may have become Completed by itself).
	want      messaging.CampaignStatus
	cancelled bool
	scheduled time.Time // Ready until then
	// stops are the SMSC sequence windows in which none of its messages
	// may go on the wire: from the answer to a pause or cancel to the call
	// of the next resume (stillStopped: none yet).
	stops [][2]int64
	// halts tell, for each of stops, which process answered the pause or
	// cancel ("" none: the API's view) and when: it withdraws its sends
	// at once, the others within their HaltInterval.
	halts []halt
}

// halt is one pause or cancel.
type halt struct {
	by string
	at time.Time
}

// world is one sequence: the store, the processes, the fake SMSC, the
// clock and the model.
type world struct {
	tb        *testing.T
	backend   string
	open      opener
	closeAPI  func()
	api       *herald.Herald // the API's view: never runs, never dies
	clk       *clock
	sc        *smsc
	slots     map[string]*proc // the current process of each name
	procs     map[string]*proc // every process, by its SMSC label
	born      map[string]int
	companies []*company
	camps     []*camp
	byID      map[messaging.ID]*camp
	phones    int
	last      map[messaging.ID]messaging.MessageStatus
	lastCamp  map[messaging.ID]messaging.CampaignStatus
	chat      *chatProvider
	// optedOut holds the numbers (digits) each company opted out, by
	// optOutKey: their messages not sent yet fail OPTED_OUT.
	optedOut map[string]bool
}

// optOutKey keys world.optedOut: a company and a number's digits.
func optOutKey(company messaging.ID, phone string) string {
	return company.String() + "/" + strings.TrimPrefix(phone, "+")
}

func newWorld(tb *testing.T, t *rapid.T, open opener) *world {
	w := &world{tb: tb, open: open, clk: &clock{now: time.Now().UTC().Truncate(time.Second)}, sc: newSMSC(),
		slots: map[string]*proc{}, procs: map[string]*proc{}, born: map[string]int{}, byID: map[messaging.ID]*camp{}, chat: newChatProvider(),
		last: map[messaging.ID]messaging.MessageStatus{}, lastCamp: map[messaging.ID]messaging.CampaignStatus{}, optedOut: map[string]bool{}}
	s, closeStore, err := open()
	if err != nil {
		t.Fatalf("open the store: %v", err)
	}
	w.closeAPI = closeStore
	w.api, err = herald.New(herald.Config{Store: s, Campaigns: campaign.Config{Now: w.clk.Now}})
	if err != nil {
		t.Fatalf("herald.New: %v", err)
	}
	ctx := context.Background()
	acc := w.api.Accounts()
	for i, conn := range []string{"a", "b"} {
		co, err := acc.CreateCompany(ctx, fmt.Sprintf("Tenant %s %d", conn, time.Now().UnixNano()))
		must(t, err)
		must(t, acc.SetCompanyActive(ctx, co.ID, true))
		sd, err := acc.RegisterSMSSender(ctx, co.ID, strings.ToUpper("TEN"+conn))
		must(t, err)
		must(t, acc.ApproveSMSSender(ctx, sd.ID))
		tpl, err := w.api.Campaigns().CreateTemplate(ctx, co.ID, messaging.Template{Name: "notice " + conn, Channel: messaging.ChannelSMS,
			MessageType: messaging.TypeSimpleText, Content: "Your parcel is on its way", SMSSenderID: sd.ID})
		must(t, err)
		cs, err := acc.AddChatService(ctx, co.ID, "Tenant "+conn, "svc-"+conn)
		must(t, err)
		w.companies = append(w.companies, &company{id: co.ID, sender: sd.ID, template: tpl.ID, conn: conn, chatService: cs.ID})
		w.sc.route[co.ID] = conn
		_ = i
	}
	w.startProc(t, "p1")
	return w
}

func must(t *rapid.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%v", err)
	}
}

// startProc starts a process under name: a restart when a process of
// that name died, which takes its claims back at once.
func (w *world) startProc(t *rapid.T, name string) {
	s, closeStore, err := w.open()
	must(t, err)
	w.born[name]++
	label := fmt.Sprintf("%s#%d", name, w.born[name])
	p, err := startProc(name, label, s, w.sc, w.chat, w.clk)
	if err != nil {
		closeStore()
	}
	must(t, err)
	p.closeStore = closeStore
	if old := w.slots[name]; old != nil {
		old.recovered = true
	}
	w.slots[name], w.procs[label] = p, p
}

// live returns the processes running, in name order.
func (w *world) live() []*proc {
	var out []*proc
	for _, name := range []string{"p1", "p2"} {
		if p := w.slots[name]; p != nil && p.alive() {
			out = append(out, p)
		}
	}
	return out
}

// deadClaims reports whether a killed process may still hold claims
// nobody took back.
func (w *world) deadClaims() bool {
	for _, p := range w.procs {
		if p.killed && !p.recovered {
			return true
		}
	}
	return false
}

// finishRounds bounds the rounds of finish: each moves the clock past the
// longest retry backoff.
const finishRounds = 15

// finish ends a sequence by letting everything run out: connectors up, a
// live process that took the dead ones' claims, paused campaigns resumed
// and ready ones started, the clock moved on until no message waits, each
// round checked: every message ends sent or failed, and every bulk
// campaign completed.
func (w *world) finish(t *rapid.T) {
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		w.sc.setMode(name, connUp)
		w.sc.setEarly(name, "")
	}
	if len(w.live()) == 0 {
		w.startProc(t, "p1")
	}
	if w.deadClaims() {
		if live := w.live(); len(live) > 1 {
			must(t, live[1].shutdown())
		}
		w.clk.advance(claimLease + time.Second)
		w.heartbeatsCatchUp(t)
		for _, p := range w.procs {
			p.recovered = p.recovered || p.killed
		}
	}
	for _, c := range w.camps {
		co := w.companies[c.company].id
		switch c.want {
		case messaging.CampaignPaused:
			c.stops[len(c.stops)-1][1] = w.sc.seqNow()
			_, err := w.api.Campaigns().Resume(ctx, co, c.id)
			must(t, err)
			c.want = messaging.CampaignInProgress
		case messaging.CampaignReady:
			if _, err := w.api.Campaigns().Start(ctx, co, c.id); err != nil && (c.scheduled.IsZero() || w.clk.Now().Before(c.scheduled)) {
				must(t, err)
			}
			c.want, c.scheduled = messaging.CampaignInProgress, time.Time{}
		}
	}
	for round := 0; ; round++ {
		w.check(t)
		waiting := 0
		for _, v := range w.read(t) {
			for _, m := range v.msgs {
				if m.Status.Unsent() {
					waiting++
				}
			}
		}
		if waiting == 0 {
			break
		}
		if round == finishRounds {
			t.Fatalf("%d messages still wait after %d rounds", waiting, finishRounds)
		}
		w.clk.advance(delivery.DefaultRetryMax + time.Minute)
		w.heartbeatsCatchUp(t)
	}
	// The last check (completion included) passed with nothing waiting.
	w.finishChat(t)
}

// close stops the live processes cleanly and closes their store
// handles; the killed ones lost theirs at the kill, and finish their
// abandoned drain in the background (their calls fail).
func (w *world) close(t *rapid.T) {
	w.sc.setMode("a", connUp)
	w.sc.setMode("b", connUp)
	for _, p := range w.live() {
		if err := p.shutdown(); err != nil {
			t.Errorf("process %s stopped with %v", p.label, err)
		}
	}
	_ = w.api.Close(context.Background())
	w.closeAPI()
}

// phone returns a number not used before in the sequence.
func (w *world) phone() string {
	w.phones++
	return fmt.Sprintf("+4477009%05d", w.phones)
}

// validity draws a validity period: none, or one the clock can overtake.
func validity(t *rapid.T) int {
	if rapid.Bool().Draw(t, "validity") {
		return rapid.IntRange(messaging.MinValidity, 3*messaging.MinValidity).Draw(t, "seconds")
	}
	return 0
}

func (w *world) addCamp(c messaging.Campaign, company int, kind string, want messaging.CampaignStatus) *camp {
	m := &camp{id: c.ID, company: company, kind: kind, want: want}
	w.camps = append(w.camps, m)
	w.byID[c.ID] = m
	return m
}

// pick draws one of the campaigns the model expects in one of the
// statuses; it skips the action when there is none.
func (w *world) pick(t *rapid.T, kinds []string, wants ...messaging.CampaignStatus) *camp {
	var cs []*camp
	for _, c := range w.camps {
		if !c.cancelled && slices.Contains(wants, c.want) && slices.Contains(kinds, c.kind) {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		t.Skip("no such campaign")
	}
	return cs[rapid.IntRange(0, len(cs)-1).Draw(t, "campaign")]
}

// refresh reads a campaign's status after a move the API refused: it
// completed by itself meanwhile.
func (w *world) refused(t *rapid.T, c *camp, what string, err error) {
	got, gerr := w.api.Campaigns().GetCampaign(context.Background(), w.companies[c.company].id, c.id)
	must(t, gerr)
	if got.Status == messaging.CampaignCompleted && c.want == messaging.CampaignInProgress {
		c.want = messaging.CampaignCompleted
		return
	}
	t.Fatalf("%s of campaign %s (%s, expected %s) refused: %v", what, c.id, got.Status, c.want, err)
}

var (
	sendable  = []string{"bulk", "direct", "transactional"}
	startable = []string{"bulk"}
)

// actions are the operations of a sequence; "" checks the invariants
// after each.
func (w *world) actions() map[string]func(*rapid.T) {
	ctx := context.Background()
	actions := map[string]func(*rapid.T){
		"": w.check,
		"bulk": func(t *rapid.T) {
			ci := rapid.IntRange(0, 1).Draw(t, "company")
			co := w.companies[ci]
			n := rapid.IntRange(1, 2*concurrency).Draw(t, "recipients")
			rs := make([]campaign.Recipient, n)
			for i := range rs {
				rs[i].Phone = w.phone()
			}
			res, err := w.api.Campaigns().SendBulk(ctx, co.id, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: co.template,
				Recipients: rs, ValidityPeriod: validity(t)})
			if messaging.IsCode(err, messaging.Invalid) && len(res.OptedOutPhoneNumbers) == n {
				t.Skip("every recipient opted out")
			}
			must(t, err)
			w.addCamp(res.Campaign, ci, "bulk", messaging.CampaignReady)
			w.waitPrepared(t, co.id, res.Campaign.ID)
		},
		"direct": func(t *rapid.T) {
			ci := rapid.IntRange(0, 1).Draw(t, "company")
			co := w.companies[ci]
			rs := make([]campaign.Recipient, rapid.IntRange(1, 3).Draw(t, "recipients"))
			for i := range rs {
				rs[i].Phone = w.phone()
			}
			res, err := w.api.Campaigns().SendDirectSMS(ctx, co.id, campaign.DirectSMS{Content: "Your code is 1234", SMSSenderID: co.sender,
				Recipients: rs, ValidityPeriod: validity(t)})
			must(t, err)
			w.addCamp(res.Campaign, ci, "direct", messaging.CampaignInProgress)
			w.waitPrepared(t, co.id, res.Campaign.ID)
		},
		"addMessage": func(t *rapid.T) {
			ci := rapid.IntRange(0, 1).Draw(t, "company")
			co := w.companies[ci]
			if co.txn == nil || co.txn.cancelled {
				c, err := w.api.Campaigns().CreateTransactional(ctx, co.id, messaging.ChannelSMS, campaign.NewCampaign{
					Name: fmt.Sprintf("alerts %d", len(w.camps)), TemplateID: co.template})
				must(t, err)
				co.txn = w.addCamp(c, ci, "transactional", messaging.CampaignInProgress)
			}
			if co.txn.want != messaging.CampaignInProgress {
				t.Skip("the transactional campaign is paused")
			}
			_, err := w.api.Campaigns().AddMessage(ctx, co.id, messaging.ChannelSMS, co.txn.id, campaign.Recipient{Phone: w.phone(),
				ValidityPeriod: validity(t)})
			must(t, err)
		},
		"start": func(t *rapid.T) {
			c := w.pick(t, startable, messaging.CampaignReady)
			if _, err := w.api.Campaigns().Start(ctx, w.companies[c.company].id, c.id); err != nil {
				if !c.scheduled.IsZero() && !w.clk.Now().Before(c.scheduled) {
					t.Skip("started by its schedule")
				}
				w.refused(t, c, "start", err)
			}
			c.want, c.scheduled = messaging.CampaignInProgress, time.Time{}
		},
		"schedule": func(t *rapid.T) {
			c := w.pick(t, startable, messaging.CampaignReady)
			if !c.scheduled.IsZero() {
				t.Skip("scheduled already")
			}
			at := w.clk.Now().Add(time.Duration(rapid.IntRange(2, 240).Draw(t, "sendAt in seconds")) * time.Second)
			_, err := w.api.Campaigns().Schedule(ctx, w.companies[c.company].id, c.id, at)
			must(t, err)
			c.scheduled = at
		},
		"pause": func(t *rapid.T) {
			c := w.pick(t, []string{"bulk", "transactional"}, messaging.CampaignInProgress)
			h, by := w.control(t)
			if _, err := h.Campaigns().Pause(ctx, w.companies[c.company].id, c.id); err != nil {
				w.refused(t, c, "pause", err)
				return
			}
			c.want = messaging.CampaignPaused
			c.stops = append(c.stops, [2]int64{w.sc.seqNow(), stillStopped})
			c.halts = append(c.halts, halt{by: by, at: time.Now()})
		},
		"resume": func(t *rapid.T) {
			c := w.pick(t, []string{"bulk", "transactional"}, messaging.CampaignPaused)
			c.stops[len(c.stops)-1][1] = w.sc.seqNow()
			h, _ := w.control(t)
			_, err := h.Campaigns().Resume(ctx, w.companies[c.company].id, c.id)
			must(t, err)
			c.want = messaging.CampaignInProgress
		},
		"cancel": func(t *rapid.T) {
			c := w.pick(t, []string{"bulk", "transactional"}, messaging.CampaignReady, messaging.CampaignInProgress, messaging.CampaignPaused)
			h, by := w.control(t)
			if _, err := h.Campaigns().Cancel(ctx, w.companies[c.company].id, c.id); err != nil {
				w.refused(t, c, "cancel", err)
				return
			}
			if c.want == messaging.CampaignPaused {
				c.stops[len(c.stops)-1][1] = stillStopped
			} else {
				c.stops = append(c.stops, [2]int64{w.sc.seqNow(), stillStopped})
				c.halts = append(c.halts, halt{by: by, at: time.Now()})
			}
			c.want, c.cancelled = messaging.CampaignCompleted, true
		},
		"advanceClock": func(t *rapid.T) {
			// Up to a few minutes: past validity periods, retry
			// backoffs and schedules, never past the claim lease.
			d := time.Duration(rapid.IntRange(1, 200).Draw(t, "seconds")) * time.Second
			w.clk.advance(d)
			w.heartbeatsCatchUp(t)
		},
		"receipts": func(t *rapid.T) {
			live := w.live()
			if len(live) == 0 {
				t.Skip("no process to take receipts")
			}
			var open []submit
			for _, s := range w.sc.snapshot() {
				if s.accepted && s.receipt == "" {
					open = append(open, s)
				}
			}
			if len(open) == 0 {
				t.Skip("no receipt to send")
			}
			// Any of them, in any order: the SMSC reports as it likes.
			idx := rapid.Permutation(indexes(len(open))).Draw(t, "order")
			idx = idx[:rapid.IntRange(1, len(idx)).Draw(t, "receipts")]
			for _, i := range idx {
				s := open[i]
				state := rapid.SampledFrom([]string{delivery.StateDelivered, delivery.StateDelivered, delivery.StateUndeliverable}).Draw(t, "state")
				p := live[rapid.IntRange(0, len(live)-1).Draw(t, "taken by")]
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err := p.h.HandleReceipt(rctx, delivery.Receipt{ProviderID: s.parts[0], State: state, Err: "000", At: w.clk.Now()})
				cancel()
				must(t, err)
				w.sc.setReceipt(s.parts[0], state)
			}
		},
		"connector": func(t *rapid.T) {
			name := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "connector")
			mode := rapid.SampledFrom([]connMode{connUp, connUp, connThrottle, connDown, connHeld}).Draw(t, "mode")
			w.sc.setMode(name, mode)
		},
		"earlyReceipts": func(t *rapid.T) {
			name := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "connector")
			w.sc.setEarly(name, rapid.SampledFrom([]string{"", delivery.StateDelivered, delivery.StateUndeliverable}).Draw(t, "state"))
		},
		"optOut": func(t *rapid.T) {
			if w.phones == 0 {
				t.Skip("no number yet")
			}
			ci := rapid.IntRange(0, 1).Draw(t, "company")
			n := rapid.IntRange(1, w.phones).Draw(t, "number")
			phone := fmt.Sprintf("+4477009%05d", n)
			_, _, err := w.api.OptOuts().Add(ctx, w.companies[ci].id, phone, "")
			must(t, err)
			w.optedOut[optOutKey(w.companies[ci].id, phone)] = true
		},
		"kill": func(t *rapid.T) {
			live := w.live()
			if len(live) == 0 {
				t.Skip("nothing runs")
			}
			live[rapid.IntRange(0, len(live)-1).Draw(t, "process")].kill(w.sc)
		},
		"startProcess": func(t *rapid.T) {
			name := rapid.SampledFrom([]string{"p1", "p2"}).Draw(t, "name")
			if p := w.slots[name]; p != nil && p.alive() {
				t.Skip("running")
			}
			w.startProc(t, name)
		},
		"takeover": func(t *rapid.T) {
			// One live process: two would each find the other's
			// heartbeat as old as the jump.
			if len(w.live()) != 1 || !w.deadClaims() {
				t.Skip("not one live process, or no dead claims")
			}
			// The dead process's heartbeat ages past the claim lease;
			// a live one takes its claims back.
			w.clk.advance(claimLease + time.Second)
			w.heartbeatsCatchUp(t)
			for _, p := range w.procs {
				if p.killed {
					p.recovered = true
				}
			}
		},
	}
	w.chatActions(actions)
	return actions
}

// control draws the process whose API answers a pause, resume or
// cancel: one of the live ones, or the API's view when none runs.
func (w *world) control(t *rapid.T) (*herald.Herald, string) {
	live := w.live()
	if len(live) == 0 {
		return w.api, ""
	}
	p := live[rapid.IntRange(0, len(live)-1).Draw(t, "answered by")]
	return p.h, p.label
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// heartbeatsCatchUp waits until every live process has written a
// heartbeat at the clock's new time, so that the moves of several steps
// do not add up, for a live process's heartbeat, to more than the claim
// lease. A fixed wait of 120 ms did not do on a loaded Postgres: after
// about one move in twelve a live process had written no heartbeat yet
// (its maintenance loop writes them between its other store calls). A few
// such moves in a row made its heartbeat older than the lease: the other
// process could then take its claims back, and a message it had claimed
// be submitted again while it lived.
func (w *world) heartbeatsCatchUp(t *rapid.T) {
	now := w.clk.Now().UnixNano()
	deadline := time.Now().Add(settleTimeout)
	for _, p := range w.live() {
		for p.fence.beat.Load() < now {
			if time.Now().After(deadline) {
				t.Fatalf("%s wrote no heartbeat at the clock's time within %v", p.label, settleTimeout)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// waitPrepared waits until a send's messages are written (Queuing no
// more).
func (w *world) waitPrepared(t *rapid.T, company, id messaging.ID) {
	deadline := time.Now().Add(settleTimeout)
	for {
		c, err := w.api.Campaigns().GetCampaign(context.Background(), company, id)
		must(t, err)
		if c.Status != messaging.CampaignQueuing {
			if c.Status == messaging.CampaignFailed {
				t.Fatalf("campaign %s failed its preparation", id)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("campaign %s still Queuing after %v", id, settleTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
