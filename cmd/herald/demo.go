package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/routing"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/transport/chatsim"
	"github.com/heraldhq/herald/transport/smscsim"
)

// The demo company has a fixed id, so a restart on the same database finds
// it again instead of creating another.
const (
	demoCompanyID   = "0190a1e0-0000-7000-8000-00000000de70"
	demoCompanyName = "Herald Demo"
	demoSenderName  = "Herald"
	demoBrandName   = "Herald Demo"
	demoServiceID   = "herald-demo"
	demoSystemID    = "herald"
)

// demoSims are the simulators herald serve --demo runs on loopback.
type demoSims struct {
	smsc *smscsim.Server
	// backup is a second SMSC, the demo's failover connector.
	backup *smscsim.Server
	chat   *chatsim.Server
	// providers are the simulators of the other chat providers, one demo
	// chat service each.
	providers []demoProvider
	password  string
	secret    string
	token     string
	// adminToken is the admin token generated for the demo; empty when
	// HERALD_ADMIN_TOKEN gave one.
	adminToken string
}

// demoProvider is a chat provider's simulator and the credentials its
// demo service uses.
type demoProvider struct {
	kind  simKind
	sim   providerSim
	creds json.RawMessage
	// service is the demo chat service of the provider, once set up.
	service messaging.ChatService
}

// startSims starts the SMSC and chat provider simulators on loopback, the
// chat one posting its callbacks to the server at baseURL, and points
// cfg's transports at them. Without HERALD_ADMIN_TOKEN it generates an
// admin token.
func startSims(cfg *config, baseURL string, log *slog.Logger) (*demoSims, error) {
	s := &demoSims{password: randomToken(4), secret: randomToken(16), token: randomToken(16)}
	s.smsc = smscsim.New(smscsim.Config{SystemID: demoSystemID, Password: s.password, Logger: log.With("component", "smsc-simulator")})
	if err := s.smsc.Start("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start the SMSC simulator: %w", err)
	}
	s.backup = smscsim.New(smscsim.Config{SystemID: demoSystemID, Password: s.password, Logger: log.With("component", "backup-smsc-simulator")})
	if err := s.backup.Start("127.0.0.1:0"); err != nil {
		_ = s.smsc.Close()
		return nil, fmt.Errorf("start the backup SMSC simulator: %w", err)
	}
	s.chat = chatsim.New(chatsim.Config{
		Token: s.token, CallbackURL: baseURL + "/callbacks/chat", CallbackSecret: s.secret,
		DeliveredDelay: 200 * time.Millisecond, SeenDelay: 500 * time.Millisecond, ReplyDelay: 500 * time.Millisecond,
		Logger: log.With("component", "chat-simulator"),
	})
	if err := s.chat.Start("127.0.0.1:0"); err != nil {
		_ = s.smsc.Close()
		_ = s.backup.Close()
		return nil, fmt.Errorf("start the chat provider simulator: %w", err)
	}
	for _, k := range simKinds() {
		// Their callback URLs name the demo services: set once those exist.
		creds := k.credentials()
		sim, err := k.start(context.Background(), "127.0.0.1:0", creds, k.channel, "", 0, log.With("component", k.provider+"-simulator"))
		if err != nil {
			s.close()
			return nil, fmt.Errorf("start the %s simulator: %w", k.provider, err)
		}
		s.providers = append(s.providers, demoProvider{kind: k, sim: sim, creds: creds})
	}
	cfg.SMPPAddr, cfg.SMPPSystemID, cfg.SMPPPassword = s.smsc.Addr(), demoSystemID, s.password
	cfg.ChatURL, cfg.ChatToken, cfg.ChatCallbackSecret = s.chat.URL(), s.token, s.secret
	// The demo's webhook receivers run on this machine.
	cfg.WebhookURLs.AllowLoopbackHTTP = true
	if cfg.AdminToken == "" {
		s.adminToken = randomToken(16)
		cfg.AdminToken = s.adminToken
	}
	return s, nil
}

// close stops the simulators.
func (s *demoSims) close() {
	for _, p := range s.providers {
		_ = p.sim.Close()
	}
	_ = s.chat.Close()
	_ = s.smsc.Close()
	_ = s.backup.Close()
}

// demoBackup names the demo's failover connector.
const demoBackup = "demo-backup"

// setUpBackup points the demo's failover connector at the backup SMSC
// simulator (its port changes with every start) and, the first time,
// adds a catch-all failover route: the default connector, then it.
func setUpBackup(ctx context.Context, store *sqlstore.Store, sims *demoSims) error {
	rs, err := routing.New(routing.Config{Store: store})
	if err != nil {
		return err
	}
	c := routing.Connector{Name: demoBackup, Addr: sims.backup.Addr(), SystemID: demoSystemID, Password: sims.password}
	if _, err := rs.Connector(ctx, demoBackup); messaging.IsCode(err, messaging.NotFound) {
		_, err = rs.CreateConnector(ctx, c)
		if err != nil {
			return fmt.Errorf("demo: backup connector: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("demo: backup connector: %w", err)
	} else if _, err := rs.UpdateConnector(ctx, c, false); err != nil {
		return fmt.Errorf("demo: backup connector: %w", err)
	}
	routes, err := rs.Routes(ctx)
	if err != nil {
		return fmt.Errorf("demo: routes: %w", err)
	}
	for _, r := range routes {
		for _, t := range r.Targets {
			if t.Connector == demoBackup {
				return nil
			}
		}
	}
	_, err = rs.CreateRoute(ctx, routing.Route{Position: 1000, Strategy: routing.Failover,
		Targets: []routing.Target{{Connector: routing.DefaultConnector}, {Connector: demoBackup}}})
	if err != nil {
		return fmt.Errorf("demo: failover route: %w", err)
	}
	return nil
}

// setUpDemo makes sure the demo company exists, is active, and has an
// approved SMS sender and a chat service; it gives the company a new API
// key and prints how to use it.
func setUpDemo(ctx context.Context, acc *accounts.Service, store *sqlstore.Store, baseURL string, sims *demoSims, w io.Writer) error {
	id, err := messaging.ParseID(demoCompanyID)
	if err != nil {
		return fmt.Errorf("demo company id: %w", err)
	}
	if _, err := store.GetCompany(ctx, id); messaging.IsCode(err, messaging.NotFound) {
		co := messaging.Company{ID: id, Name: demoCompanyName, Active: true, CreatedAt: time.Now().UTC()}
		if err := store.CreateCompany(ctx, &co); err != nil {
			return fmt.Errorf("create the demo company: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("find the demo company: %w", err)
	}
	if err := acc.SetCompanyActive(ctx, id, true); err != nil {
		return err
	}

	senders, err := store.ListSMSSenders(ctx, id, false)
	if err != nil {
		return fmt.Errorf("list the demo senders: %w", err)
	}
	var sender messaging.SMSSender
	for _, s := range senders {
		if s.SenderID == demoSenderName {
			sender = s
		}
	}
	if sender.ID == 0 {
		if sender, err = acc.RegisterSMSSender(ctx, id, demoSenderName); err != nil {
			return err
		}
	}
	if !sender.Approved {
		if err := acc.ApproveSMSSender(ctx, sender.ID); err != nil {
			return err
		}
	}

	services, err := acc.ListChatServices(ctx, id)
	if err != nil {
		return err
	}
	var service messaging.ChatService
	for _, s := range services {
		if s.BrandName == demoBrandName {
			service = s
		}
	}
	if service.ID == 0 {
		if service, err = acc.AddChatService(ctx, id, demoBrandName, demoServiceID); err != nil {
			return err
		}
	}

	if err := setUpProviderServices(ctx, acc, id, services, baseURL, sims); err != nil {
		return err
	}

	key, err := acc.GenerateAPIKey(ctx, id)
	if err != nil {
		return err
	}
	admin := "(HERALD_ADMIN_TOKEN)"
	if sims.adminToken != "" {
		admin = sims.adminToken + " (generated; set HERALD_ADMIN_TOKEN to choose one)"
	}
	api := baseURL + "/api/v1"
	fmt.Fprintf(w, `
Herald demo is running at %[1]s
  console              %[1]s/console/ (sign in with the API key, or the admin token as the operator)
  API key (X-API-Key)  %[2]s
  admin token          %[3]s
  SMS sender           id %[4]d, %[5]q (approved)
  chat service         id %[6]d, %[7]q
  SMSC simulator       %[8]s (SMPP; a second one, %[11]s, is the failover of the demo-backup connector)
  chat simulator       %[9]s
%[12]sOutcomes by number: ending 0001, 0002, 0003 get SMS receipts UNDELIVERED, EXPIRED, REJECTED;
ending 0008, 0009, 0010 chat errors 8, 9, 10 (the SMS fallback); every other number is delivered.

Set the shell variables the README uses:
  export API=%[10]s KEY=%[2]s

Send a first SMS:
  curl -s -H 'X-API-Key: %[2]s' -H 'Content-Type: application/json' -d '{"messageContent":"Hello from Herald","smsSenderId":%[4]d,"recipients":[{"phoneNumber":"+447700900123"}]}' %[10]s/sms/send

Reply from a handset (the SMSC simulator sends it to Herald; GET /api/v1/inbound lists it):
  curl -s -d '{"from":"447700900123","to":%[5]q,"text":"Thanks!"}' %[1]s/demo/smsc/mo

`, baseURL, key, admin, sender.ID, sender.SenderID, service.ID, service.BrandName, sims.smsc.Addr(), sims.chat.URL(), api, sims.backup.Addr(), providerLines(sims))
	return nil
}

// demoBrand is the brand name of the demo chat service of provider.
func demoBrand(provider string) string { return demoBrandName + " (" + provider + ")" }

// setUpProviderServices gives the demo company one chat service per
// provider simulator, pointed at it (its address and credentials change
// with every start), and has each simulator call back that service's
// endpoint.
func setUpProviderServices(ctx context.Context, acc *accounts.Service, company messaging.ID, existing []messaging.ChatService,
	baseURL string, sims *demoSims) error {
	for i := range sims.providers {
		p := &sims.providers[i]
		in := accounts.ChatServiceInput{BrandName: demoBrand(p.kind.provider), ProviderServiceID: p.kind.sender, Provider: p.kind.provider,
			Channel: p.kind.channel, BaseURL: p.sim.URL(), Credentials: p.creds}
		var id int64
		for _, cs := range existing {
			if cs.BrandName == in.BrandName {
				id = cs.ID
			}
		}
		var err error
		if id == 0 {
			p.service, err = acc.CreateChatService(ctx, company, in)
		} else {
			p.service, err = acc.UpdateChatService(ctx, company, id, in)
		}
		if err != nil {
			return fmt.Errorf("demo: the %s chat service: %w", p.kind.provider, err)
		}
		p.sim.SetCallbackURL(baseURL + "/callbacks/chat/" + strconv.FormatInt(p.service.ID, 10))
	}
	return nil
}

// providerLines are the banner's lines of the provider simulators.
func providerLines(sims *demoSims) string {
	var b strings.Builder
	for _, p := range sims.providers {
		fmt.Fprintf(&b, "  chat service         id %d, %q: %s over %s, simulator %s\n", p.service.ID, p.service.BrandName,
			p.kind.provider, p.kind.channel, p.sim.URL())
	}
	return b.String()
}
