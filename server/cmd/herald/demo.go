package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
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
	smsc     *smscsim.Server
	chat     *chatsim.Server
	password string
	secret   string
	token    string
}

func startSims(log *slog.Logger) (*demoSims, error) {
	s := &demoSims{password: randomToken(4), secret: randomToken(16), token: randomToken(16)}
	s.smsc = smscsim.New(smscsim.Config{SystemID: demoSystemID, Password: s.password, Logger: log.With("component", "smsc-simulator")})
	if err := s.smsc.Start("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start the SMSC simulator: %w", err)
	}
	return s, nil
}

// configure points cfg's transports at the simulators and starts the chat
// simulator, whose callbacks go to the server at baseURL.
func (s *demoSims) configure(cfg *config, baseURL string) {
	s.chat = chatsim.New(chatsim.Config{
		Token: s.token, CallbackURL: baseURL + "/callbacks/chat", CallbackSecret: s.secret,
		DeliveredDelay: 200 * time.Millisecond, SeenDelay: 500 * time.Millisecond, ReplyDelay: 500 * time.Millisecond,
	})
	if err := s.chat.Start("127.0.0.1:0"); err == nil {
		cfg.ChatURL, cfg.ChatToken, cfg.ChatCallbackSecret = s.chat.URL(), s.token, s.secret
	}
	cfg.SMPPAddr, cfg.SMPPSystemID, cfg.SMPPPassword = s.smsc.Addr(), demoSystemID, s.password
	if cfg.AdminToken == "" {
		cfg.AdminToken = randomToken(16)
	}
}

func (s *demoSims) close() {
	if s.chat != nil {
		_ = s.chat.Close()
	}
	_ = s.smsc.Close()
}

// setUpDemo makes sure the demo company exists, is active, and has an
// approved SMS sender and a chat service; it gives the company a new API
// key and prints how to use it.
func setUpDemo(ctx context.Context, svc *campaign.Service, store *sqlstore.Store, cfg config, baseURL string, sims *demoSims, w io.Writer) error {
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
	if err := svc.SetCompanyActive(ctx, id, true); err != nil {
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
		if sender, err = svc.RegisterSMSSender(ctx, id, demoSenderName); err != nil {
			return err
		}
	}
	if !sender.Approved {
		if err := svc.ApproveSMSSender(ctx, sender.ID); err != nil {
			return err
		}
	}

	services, err := svc.ListChatServices(ctx, id)
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
		if service, err = svc.AddChatService(ctx, id, demoBrandName, demoServiceID); err != nil {
			return err
		}
	}

	key, err := svc.GenerateAPIKey(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, `
Herald demo is running at %[1]s
  API key (X-API-Key):  %[2]s
  admin token:          %[3]s
  SMS sender id:        %[4]d (%[5]s, approved)
  chat service id:      %[6]d (%[7]s)
  SMSC simulator:       %[8]s (SMPP)
  chat simulator:       %[9]s
Numbers ending 0001/0002/0003 get SMS receipts UNDELIVERED/EXPIRED/REJECTED,
0008/0009/0010 chat errors 8/9/10 (SMS fallback); every other number is delivered.

Try:
  curl -s -H 'X-API-Key: %[2]s' %[1]s/api/v1/sms-senders

`, baseURL, key, cfg.AdminToken, sender.ID, sender.SenderID, service.ID, service.BrandName, sims.smsc.Addr(), cfg.ChatURL)
	return nil
}
