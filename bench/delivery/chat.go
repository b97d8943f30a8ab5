package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/survey"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatsim"
)

// The provider credentials of a chat run.
const (
	chatToken  = "bench-provider-token"
	chatSecret = "bench-callback-secret"
	chatSvcID  = "herald-bench"
)

// chatOptions are the options of -channel chat.
type chatOptions struct {
	template        string
	callbackWorkers int
	deliveredDelay  time.Duration
	seenDelay       time.Duration
	noCallbacks     bool
	discard         bool
	simProfile      string
}

func (c *chatOptions) flags() {
	flag.StringVar(&c.template, "chat-type", "text", `chat campaign message type: "text" or "survey" (3 options, answered by the simulator)`)
	flag.IntVar(&c.callbackWorkers, "callback-workers", 0, "callbacks the chat simulator posts at once (0: its default)")
	flag.DurationVar(&c.deliveredDelay, "delivered-delay", 0, "chat simulator: acceptance to delivered callback")
	flag.BoolVar(&c.noCallbacks, "no-callbacks", false, "the chat simulator posts no callbacks: measure the sends alone")
	flag.BoolVar(&c.discard, "discard-callbacks", false,
		"callbacks are received, verified and parsed but not stored: the cost of the callbacks' transport alone (campaign never Delivered)")
	flag.StringVar(&c.simProfile, "sim-cpuprofile", "", "write a CPU profile of the chat simulator process to this file")
	flag.DurationVar(&c.seenDelay, "seen-delay", 0, "chat simulator: delivered to seen callback, and seen to a survey's reply")
}

// serveChat runs the chat provider simulator on a free loopback port with
// the flags of args, prints its URL, serves until its standard input
// closes, then prints its Stats as JSON.
func serveChat(args []string) error {
	fs := flag.NewFlagSet("serve-chat", flag.ContinueOnError)
	callbackURL := fs.String("callback-url", "", "")
	workers := fs.Int("callback-workers", 0, "")
	delivered := fs.Duration("delivered-delay", 0, "")
	seen := fs.Duration("seen-delay", 0, "")
	profile := fs.String("cpuprofile", "", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	sim := chatsim.New(chatsim.Config{Token: chatToken, ServiceIDs: []string{chatSvcID},
		CallbackURL: *callbackURL, CallbackSecret: chatSecret, CallbackWorkers: *workers,
		DeliveredDelay: *delivered, SeenDelay: *seen, ReplyDelay: *seen})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		return err
	}
	fmt.Println(sim.URL())
	_, _ = io.Copy(io.Discard, os.Stdin)
	st := sim.Stats()
	if err := sim.Close(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(st)
}

// chatSim is the simulator process of a chat run.
type chatSim struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	url   string
}

// startChatSim starts the simulator process, posting its callbacks to
// callbackURL.
func startChatSim(o chatOptions, callbackURL string) (*chatSim, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve-chat", "-callback-url", callbackURL,
		"-callback-workers", fmt.Sprint(o.callbackWorkers),
		"-delivered-delay", o.deliveredDelay.String(), "-seen-delay", o.seenDelay.String(), "-cpuprofile", o.simProfile)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	out := bufio.NewReader(stdout)
	u, err := out.ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("read the simulator's URL: %w", err)
	}
	return &chatSim{cmd: cmd, stdin: stdin, out: out, url: strings.TrimSpace(u)}, nil
}

// stop ends the simulator process and returns its stats and CPU time.
func (s *chatSim) stop() (chatsim.Stats, time.Duration, error) {
	_ = s.stdin.Close()
	var st chatsim.Stats
	derr := json.NewDecoder(s.out).Decode(&st)
	if err := s.cmd.Wait(); err != nil {
		return st, 0, fmt.Errorf("simulator: %w", err)
	}
	if derr != nil {
		return st, 0, fmt.Errorf("simulator stats: %w", derr)
	}
	return st, s.cmd.ProcessState.UserTime() + s.cmd.ProcessState.SystemTime(), nil
}

// kill ends the simulator process at once.
func (s *chatSim) kill() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// chatCampaign is a prepared chat campaign and what its run should see.
type chatCampaign struct {
	company  messaging.Company
	campaign messaging.Campaign
	accepted int // messages the simulator accepts
	// callbacks is how many callbacks the accepted messages get.
	callbacks int
}

// milestone is when a run reached a point, and the CPU time of this
// process then.
type milestone struct {
	at  time.Duration
	cpu time.Duration
}

// runChat measures a bulk chat campaign end to end: the dispatcher sends it
// through the chat client over HTTP to the simulator process, which posts
// its delivered and seen callbacks (and a survey's reply) over HTTP to the
// callback endpoint of this process, wired as herald serve wires it
// (chat.CallbackHandler over delivery.ChatEvents). The clock runs until
// every message was handed to the provider, until every accepted one is
// Delivered (or Seen), and until every callback was stored.
func runChat(ctx context.Context, o options, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var msgType messaging.MessageType
	switch o.chat.template {
	case "text":
		msgType = messaging.TypeSimpleText
	case "survey":
		msgType = messaging.TypeSurvey
	default:
		return errors.New(`-chat-type must be "text" or "survey"`)
	}
	dbURL, cleanup, err := database(ctx, o.db)
	if err != nil {
		return err
	}
	defer cleanup()
	store, err := sqlstore.Open(ctx, dbURL, sqlstore.Config{})
	if err != nil {
		return err
	}
	defer store.Close()
	logger := newLogger(o.verbose)

	// The callback endpoint, as herald serve mounts it.
	answers, err := survey.New(survey.Config{Store: store, Logger: logger})
	if err != nil {
		return err
	}
	events := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: store, Answers: answers, Logger: logger})
	var stored, notStored atomic.Int64
	mux := http.NewServeMux()
	mux.Handle("/callbacks/chat", chat.CallbackHandler(chat.CallbackConfig{Secret: chatSecret, Logger: logger,
		Reporter: &countingReporter{Reports: delivery.Reports{Chat: events}, discard: o.chat.discard, stored: &stored, notStored: &notStored}}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	callbackURL := "http://" + ln.Addr().String() + "/callbacks/chat"
	if o.chat.noCallbacks {
		callbackURL = ""
	}
	sim, err := startChatSim(o.chat, callbackURL)
	if err != nil {
		return fmt.Errorf("start the chat simulator: %w", err)
	}
	defer sim.kill()
	client, err := chat.New(chat.Config{BaseURL: sim.url, Token: chatToken})
	if err != nil {
		return err
	}
	defer client.Close()

	obs := &batchStats{ops: map[string]*opStats{}}
	d, err := delivery.New(delivery.Config{Store: store, Chat: client, OnChatFailure: events.OnChatFailure,
		Logger: logger, Observer: obs, ChatConcurrency: o.concurrency, BatchSize: o.batch, WriteDelay: o.writeDelay, Writers: o.writers})
	if err != nil {
		return err
	}
	cc, err := prepareChat(ctx, store, o.messages, msgType)
	if err != nil {
		return fmt.Errorf("prepare the campaign: %w", err)
	}
	if o.chat.noCallbacks {
		cc.callbacks = 0
	}
	m, err := startMeasured(ctx, o, store, d, cc.company.ID, cc.campaign.ID)
	if err != nil {
		return err
	}
	defer m.close()
	start, cpu0 := m.start, m.cpu0
	var sent, delivered, all *milestone
	mark := func() *milestone { return &milestone{at: time.Since(start), cpu: cpuTime() - cpu0} }
	var got messaging.Campaign
	for all == nil {
		got, err = store.GetCampaign(ctx, cc.company.ID, cc.campaign.ID)
		if err != nil {
			return err
		}
		n := got.Counts
		if sent == nil && n.Pending+n.Sending == 0 {
			sent = mark()
		}
		if delivered == nil && sent != nil && (o.chat.noCallbacks || o.chat.discard || n.Delivered+n.Seen == cc.accepted) {
			delivered = mark()
		}
		if delivered != nil && stored.Load() >= int64(cc.callbacks) {
			all = mark()
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %v: %+v, %d callbacks stored, %d not: %w", time.Since(start).Round(time.Millisecond),
				got.Counts, stored.Load(), notStored.Load(), ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	sysCPU, err := m.finish(o)
	if err != nil {
		return err
	}
	got, err = store.GetCampaign(ctx, cc.company.ID, cc.campaign.ID)
	if err != nil {
		return err
	}
	simStats, simCPU, err := sim.stop()
	if err != nil {
		return err
	}
	n := float64(o.messages)
	rate := func(m *milestone) string {
		return fmt.Sprintf("%-9v %6.0f msgs/s, cpu herald %5.1f µs/msg", m.at.Round(time.Millisecond),
			n/m.at.Seconds(), float64(m.cpu.Microseconds())/n)
	}
	fmt.Fprintf(out, "database            %s\n", dbName(dbURL))
	fmt.Fprintf(out, "campaign            %d chat messages, type %s (%d accepted by the provider, %d refused)\n",
		o.messages, o.chat.template, cc.accepted, o.messages-cc.accepted)
	fmt.Fprintf(out, "final counts        sent %d, delivered %d, seen %d, failed %d\n",
		got.Counts.Sent, got.Counts.Delivered, got.Counts.Seen, got.Counts.Failed)
	fmt.Fprintf(out, "all sent after      %s\n", rate(sent))
	if !o.chat.noCallbacks {
		if !o.chat.discard {
			fmt.Fprintf(out, "all delivered after %s\n", rate(delivered))
		}
		fmt.Fprintf(out, "all callbacks after %s, %.0f callbacks/s\n", rate(all), float64(cc.callbacks)/all.at.Seconds())
	}
	fmt.Fprintf(out, "callbacks           %d stored, %d answered 500 (simulator: %d sent, %d failed, %d abandoned)\n",
		stored.Load(), notStored.Load(), simStats.CallbacksSent, simStats.CallbackFailures, simStats.CallbacksAbandoned)
	fmt.Fprintf(out, "provider            %d requests, %d accepted, %d already sent, %d refused, %d HTTP errors\n",
		simStats.Requests, simStats.Accepted, simStats.AlreadySent, simStats.Rejected, simStats.HTTPErrors)
	m.report(out, n, simCPU, sysCPU, obs)
	return nil
}

// surveyOptions are the options of the survey campaign.
var surveyOptions = []messaging.SurveyOption{
	{OptionText: "Great", OptionValue: "great"}, {OptionText: "Fine", OptionValue: "fine"}, {OptionText: "Poor", OptionValue: "poor"},
}

// prepareChat creates a company with a chat service and a Ready bulk chat
// campaign of n messages of type t. Numbers ending 0008, 0009 and 0010
// are refused by the simulator (a few per ten thousand); the others are
// delivered, then seen, and a survey is answered.
func prepareChat(ctx context.Context, s *sqlstore.Store, n int, t messaging.MessageType) (chatCampaign, error) {
	now := time.Now().UTC()
	ids := messaging.NewIDGenerator(nil)
	var cc chatCampaign
	cc.company = messaging.Company{ID: ids.New(), Name: "Bench", Active: true, CreatedAt: now}
	if err := s.CreateCompany(ctx, &cc.company); err != nil {
		return cc, err
	}
	svc := messaging.ChatService{CompanyID: cc.company.ID, BrandName: "Bench", ProviderServiceID: chatSvcID, CreatedAt: now}
	if err := s.CreateChatService(ctx, &svc); err != nil {
		return cc, err
	}
	content, perMessage := "Your order %06d has shipped", 2 // delivered, seen
	var cfg *messaging.ChatConfig
	if t == messaging.TypeSurvey {
		content, perMessage = "How was your visit, customer %06d?", 3 // and the reply
		cfg = &messaging.ChatConfig{Options: surveyOptions}
	}
	cc.campaign = messaging.Campaign{ID: ids.New(), CompanyID: cc.company.ID, Name: "bench", Channel: messaging.ChannelChat,
		Mode: messaging.ModeBulk, Status: messaging.CampaignQueuing, MessageType: t, Config: cfg,
		ChatServiceID: svc.ID, Planned: n, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateCampaign(ctx, &cc.campaign, n); err != nil {
		return cc, err
	}
	const chunk = 10_000
	batch := make([]messaging.Message, chunk)
	ptrs := make([]*messaging.Message, 0, chunk)
	for startAt := 0; startAt < n; startAt += chunk {
		ptrs = ptrs[:0]
		for i := startAt; i < min(n, startAt+chunk); i++ {
			m := &batch[i-startAt]
			*m = messaging.Message{ID: ids.New(), CompanyID: cc.company.ID, CampaignID: cc.campaign.ID, Channel: messaging.ChannelChat,
				Phone: fmt.Sprintf("4479%08d", i), Content: fmt.Sprintf(content, i),
				Status: messaging.StatusPending, DueAt: now, CreatedAt: now, UpdatedAt: now}
			if k := i % 10_000; k < 8 || k > 10 {
				cc.accepted++
			}
			ptrs = append(ptrs, m)
		}
		if err := s.InsertMessages(ctx, ptrs); err != nil {
			return cc, err
		}
	}
	cc.callbacks = perMessage * cc.accepted
	err := s.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: cc.company.ID, CampaignID: cc.campaign.ID, From: []messaging.CampaignStatus{messaging.CampaignQueuing}, To: messaging.CampaignReady, At: time.Now()})
	return cc, err
}

// countingReporter counts the chat statuses stored and not stored; with
// discard it stores nothing and counts them stored.
type countingReporter struct {
	delivery.Reports
	discard           bool
	stored, notStored *atomic.Int64
}

// ChatStatuses implements delivery.Reporter.
func (r *countingReporter) ChatStatuses(ctx context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	if r.discard {
		r.stored.Add(int64(len(ss)))
		return make([]delivery.ChatEventOutcome, len(ss)), nil
	}
	out, err := r.Reports.ChatStatuses(ctx, ss)
	if err != nil {
		r.notStored.Add(int64(len(ss)))
	} else {
		r.stored.Add(int64(len(ss)))
	}
	return out, err
}

// ChatInbound implements delivery.Reporter.
func (r *countingReporter) ChatInbound(ctx context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	if r.discard {
		r.stored.Add(1)
		return delivery.ChatEventIgnored, nil
	}
	out, err := r.Reports.ChatInbound(ctx, in)
	if err != nil {
		r.notStored.Add(1)
	} else {
		r.stored.Add(1)
	}
	return out, err
}
