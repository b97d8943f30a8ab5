// Command delivery measures Herald's delivery engine end to end on
// loopback: a bulk SMS campaign of -messages messages is started, and the
// clock runs until every message has its delivery receipt applied. The
// messages go through delivery.Dispatcher, the SMPP adapter
// (transport/smpp) and a real TCP connection to the SMSC simulator
// (transport/smscsim), which runs in a process of its own so that the
// figures of this process are Herald's alone; the receipts come back the
// same way.
//
// It reports messages per second; the CPU time (user + system) per
// message of this process, of the simulator process and of the whole
// machine (the database server included) over the run; the peak memory
// (the process's peak resident set, setup included, and the peak Go heap
// during the run); what became of the receipts; and the dispatcher's store
// calls, by operation.
//
//	go build -o /tmp/herald-delivery-bench ./bench/delivery
//	/tmp/herald-delivery-bench -db sqlite
//	/tmp/herald-delivery-bench -db 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// With -channel chat the campaign is a bulk chat campaign (-chat-type text
// or survey) sent through the chat client (transport/chat) over HTTP to the
// chat provider simulator (transport/chatsim, in a process of its own),
// whose delivered and seen callbacks, and a survey's reply, come back over
// HTTP to the callback endpoint of this process (chat.CallbackHandler over
// delivery.ChatEvents, as herald serve mounts it). It reports when every
// message was handed to the provider, when every accepted one was
// Delivered, and when every callback was stored; -no-callbacks measures
// the sends alone.
//
//	/tmp/herald-delivery-bench -channel chat -db sqlite
//	/tmp/herald-delivery-bench -channel chat -chat-type survey -db sqlite
//
// With -db sqlite the database is a new file in a temporary directory; with
// a Postgres URL the run uses a new schema of that database, dropped at the
// end. -cpuprofile, -memprofile and -goroutines write profiles
// (-sim-cpuprofile one of the chat simulator). The whole
// run is bounded by -timeout. The process runs with the herald binary's
// collector settings (GOGC=200, GOMEMLIMIT=200MiB) unless the environment
// sets GOGC or GOMEMLIMIT; the report's last line says which were used.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/gctune"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
)

type options struct {
	db          string
	channel     string
	messages    int
	window      int
	receipts    int
	concurrency int
	batch       int
	writeDelay  time.Duration
	writers     int
	timeout     time.Duration
	cpuprofile  string
	memprofile  string
	goroutines  string
	verbose     bool
	chat        chatOptions
}

func main() {
	gctune.Apply(os.Getenv) // as the herald binary runs
	if len(os.Args) >= 2 && os.Args[1] == "-serve-chat" {
		if err := serveChat(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "delivery: chat simulator:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 2 && os.Args[1] == "-serve-smsc" {
		if err := serveSMSC(); err != nil {
			fmt.Fprintln(os.Stderr, "delivery: smsc:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.StringVar(&o.db, "db", "sqlite", `"sqlite" (a new file) or a postgres:// URL (a new schema in it)`)
	flag.StringVar(&o.channel, "channel", "sms", `"sms" (SMPP) or "chat" (HTTP, with callbacks)`)
	flag.IntVar(&o.messages, "messages", 200_000, "messages in the campaign")
	flag.IntVar(&o.window, "window", smpp.DefaultWindow, "SMPP window")
	flag.IntVar(&o.receipts, "receipt-concurrency", 256, "receipts handled at once by the SMPP adapter")
	flag.IntVar(&o.concurrency, "concurrency", 0, "dispatcher SMS or chat concurrency (0: default)")
	flag.IntVar(&o.batch, "batch", 0, "dispatcher claim batch (0: default)")
	flag.DurationVar(&o.writeDelay, "write-delay", 0, "dispatcher write delay (0: default)")
	flag.IntVar(&o.writers, "writers", 0, "dispatcher results writers (0: the store's default)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the run")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the run to this file")
	flag.StringVar(&o.memprofile, "memprofile", "", "write an allocation profile (whole process) to this file")
	flag.StringVar(&o.goroutines, "goroutines", "", "write the goroutines' stacks 3s into the run to this file")
	flag.BoolVar(&o.verbose, "v", false, "log the dispatcher's warnings")
	o.chat.flags()
	flag.Parse()
	runner := run
	switch o.channel {
	case "sms":
	case "chat":
		runner = runChat
	default:
		fmt.Fprintln(os.Stderr, `delivery: -channel must be "sms" or "chat"`)
		os.Exit(2)
	}
	if err := runner(context.Background(), o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "delivery:", err)
		os.Exit(1)
	}
}

// serveSMSC runs the simulator on a free loopback port, prints its address
// and serves until its standard input closes.
func serveSMSC() error {
	sim := smscsim.New(smscsim.Config{SystemID: "herald", Password: "secret"})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		return err
	}
	fmt.Println(sim.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return sim.Close()
}

// startSMSC starts the simulator process and returns its address.
func startSMSC() (*exec.Cmd, io.WriteCloser, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, "", err
	}
	cmd := exec.Command(self, "-serve-smsc")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, "", err
	}
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, nil, "", fmt.Errorf("read the simulator's address: %w", err)
	}
	return cmd, stdin, strings.TrimSpace(addr), nil
}

func run(ctx context.Context, o options, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
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

	simCmd, simIn, addr, err := startSMSC()
	if err != nil {
		return fmt.Errorf("start the simulator: %w", err)
	}
	defer func() { _ = simCmd.Process.Kill() }()

	logger := newLogger(o.verbose)
	var d *delivery.Dispatcher
	client, err := smpp.New(smpp.Config{Addr: addr, SystemID: "herald", Password: "secret", Window: o.window,
		ReceiptConcurrency: o.receipts, Logger: logger,
		ReceiptHandler: func(ctx context.Context, r delivery.Receipt) error { return d.HandleReceipt(ctx, r) }})
	if err != nil {
		return err
	}
	defer client.Close(context.Background())
	if err := client.WaitBound(ctx); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	obs := &batchStats{ops: map[string]*opStats{}}
	d, err = delivery.New(delivery.Config{Store: store, SMS: client, Logger: logger, Observer: obs,
		SMSConcurrency: o.concurrency, BatchSize: o.batch, WriteDelay: o.writeDelay, Writers: o.writers})
	if err != nil {
		return err
	}

	co, c, err := prepare(ctx, store, o.messages)
	if err != nil {
		return fmt.Errorf("prepare the campaign: %w", err)
	}
	m, err := startMeasured(ctx, o, store, d, co.ID, c.ID)
	if err != nil {
		return err
	}
	defer m.close()
	start := m.start
	var got messaging.Campaign
	for {
		got, err = store.GetCampaign(ctx, co.ID, c.ID)
		if err != nil {
			return err
		}
		if got.Counts.Delivered+got.Counts.Failed == o.messages {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %v: %+v: %w", time.Since(start).Round(time.Millisecond), got.Counts, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	elapsed := time.Since(start)
	cpu := cpuTime() - m.cpu0
	sysCPU, err := m.finish(o)
	if err != nil {
		return err
	}
	_ = simIn.Close()
	if err := simCmd.Wait(); err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	simCPU := simCmd.ProcessState.UserTime() + simCmd.ProcessState.SystemTime()

	n := float64(o.messages)
	fmt.Fprintf(out, "database            %s\n", dbName(dbURL))
	fmt.Fprintf(out, "messages            %d (%d delivered, %d failed)\n", o.messages, got.Counts.Delivered, got.Counts.Failed)
	fmt.Fprintf(out, "elapsed             %v\n", elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "throughput          %.0f msgs/s\n", n/elapsed.Seconds())
	fmt.Fprintf(out, "cpu herald          %.1f µs/msg (%v user+sys)\n", float64(cpu.Microseconds())/n, cpu.Round(time.Millisecond))
	m.report(out, n, simCPU, sysCPU, obs)
	return nil
}

// measurement is a campaign run under measurement: the dispatcher running,
// the profiles the options ask for, the Go heap sampled, the CPU counted
// from the campaign's start.
type measurement struct {
	start       time.Time
	cpu0, sys0  time.Duration
	peakHeap    atomic.Uint64
	sampling    chan struct{}
	sampled     sync.Once
	stopProfile func()
	stopRun     func()
}

// startMeasured runs d, starts the profiles and the heap sampling, takes
// the CPU baselines and starts the Ready campaign; close ends it all.
func startMeasured(ctx context.Context, o options, store *sqlstore.Store, d *delivery.Dispatcher, companyID, campaignID messaging.ID) (*measurement, error) {
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	m := &measurement{sampling: make(chan struct{}), stopRun: func() { stop(); <-done }}
	stopProfile, err := startProfile(o)
	if err != nil {
		m.stopRun()
		return nil, err
	}
	m.stopProfile = stopProfile
	go sampleHeap(&m.peakHeap, m.sampling)
	m.cpu0, m.sys0 = cpuTime(), machineCPU()
	m.start = time.Now()
	if err := store.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: companyID, CampaignID: campaignID, From: []messaging.CampaignStatus{messaging.CampaignReady}, To: messaging.CampaignInProgress, At: time.Now()}); err != nil {
		m.close()
		return nil, fmt.Errorf("start the campaign: %w", err)
	}
	d.Wake()
	return m, nil
}

// finish ends the sampling and the profiles, writes the allocation profile
// and returns the machine's CPU time since the start.
func (m *measurement) finish(o options) (time.Duration, error) {
	sysCPU := machineCPU() - m.sys0
	m.sampled.Do(func() { close(m.sampling) })
	m.stopProfile()
	return sysCPU, writeMemProfile(o.memprofile)
}

// close stops what startMeasured started.
func (m *measurement) close() {
	m.sampled.Do(func() { close(m.sampling) })
	m.stopProfile()
	m.stopRun()
}

// report prints the figures every run ends with, per message of n.
func (m *measurement) report(out io.Writer, n float64, simCPU, sysCPU time.Duration, obs *batchStats) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Fprintf(out, "cpu simulator       %.1f µs/msg\n", float64(simCPU.Microseconds())/n)
	fmt.Fprintf(out, "cpu machine         %.1f µs/msg (every process: herald, simulator, database, anything else running)\n",
		float64(sysCPU.Microseconds())/n)
	fmt.Fprintf(out, "peak heap (run)     %.0f MiB\n", float64(m.peakHeap.Load())/(1<<20))
	fmt.Fprintf(out, "peak RSS (process)  %.0f MiB\n", float64(ru.Maxrss)/1024)
	obs.print(out)
	fmt.Fprintf(out, "machine             %d CPUs, %s %s/%s, %s\n", runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, gctune.Describe())
}

// dbName names the database of a URL.
func dbName(dbURL string) string {
	if strings.HasPrefix(dbURL, "postgres") {
		return "Postgres"
	}
	return "SQLite"
}

// newLogger discards the dispatcher's logs, or with verbose shows its
// warnings.
func newLogger(verbose bool) *slog.Logger {
	if verbose {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

// startProfile starts the CPU profile and the goroutine dump the options
// ask for; the returned function stops the CPU profile (it may be called
// more than once).
func startProfile(o options) (func(), error) {
	if path := o.goroutines; path != "" {
		go func() {
			time.Sleep(3 * time.Second)
			if f, err := os.Create(path); err == nil {
				_ = pprof.Lookup("goroutine").WriteTo(f, 1)
				_ = f.Close()
			}
		}()
	}
	if o.cpuprofile == "" {
		return func() {}, nil
	}
	f, err := os.Create(o.cpuprofile)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		})
	}, nil
}

// writeMemProfile writes the allocation profile to path, when not empty.
func writeMemProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// prepare creates a company with an approved sender and a Ready bulk
// campaign of n messages.
func prepare(ctx context.Context, s *sqlstore.Store, n int) (messaging.Company, messaging.Campaign, error) {
	now := time.Now().UTC()
	ids := messaging.NewIDGenerator(nil)
	co := messaging.Company{ID: ids.New(), Name: "Bench", Active: true, CreatedAt: now}
	if err := s.CreateCompany(ctx, &co); err != nil {
		return co, messaging.Campaign{}, err
	}
	sender := messaging.SMSSender{CompanyID: co.ID, SenderID: "Herald", CreatedAt: now}
	if err := s.CreateSMSSender(ctx, &sender); err != nil {
		return co, messaging.Campaign{}, err
	}
	if err := s.ApproveSMSSender(ctx, sender.ID); err != nil {
		return co, messaging.Campaign{}, err
	}
	c := messaging.Campaign{ID: ids.New(), CompanyID: co.ID, Name: "bench", Channel: messaging.ChannelSMS,
		Mode: messaging.ModeBulk, Status: messaging.CampaignQueuing, MessageType: messaging.TypeSimpleText,
		SMSSenderID: sender.ID, Planned: n, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateCampaign(ctx, &c, n); err != nil {
		return co, c, err
	}
	const chunk = 10_000
	batch := make([]messaging.Message, chunk)
	ptrs := make([]*messaging.Message, 0, chunk)
	for startAt := 0; startAt < n; startAt += chunk {
		ptrs = ptrs[:0]
		for i := startAt; i < min(n, startAt+chunk); i++ {
			m := &batch[i-startAt]
			// Numbers ending 0001-0003 get failure receipts: a few per
			// ten thousand.
			*m = messaging.Message{ID: ids.New(), CompanyID: co.ID, CampaignID: c.ID, Channel: messaging.ChannelSMS,
				Phone: fmt.Sprintf("4479%08d", i), Content: fmt.Sprintf("Your code is %06d", i),
				Status: messaging.StatusPending, DueAt: now, CreatedAt: now, UpdatedAt: now}
			ptrs = append(ptrs, m)
		}
		if err := s.InsertMessages(ctx, ptrs); err != nil {
			return co, c, err
		}
	}
	err := s.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: co.ID, CampaignID: c.ID, From: []messaging.CampaignStatus{messaging.CampaignQueuing}, To: messaging.CampaignReady, At: time.Now()})
	return co, c, err
}

// database returns the URL of the database to use and a function that
// removes it.
func database(ctx context.Context, db string) (string, func(), error) {
	if db == "sqlite" {
		dir, err := os.MkdirTemp("", "herald-delivery-bench-")
		if err != nil {
			return "", nil, err
		}
		return "sqlite://" + filepath.Join(dir, "herald.db"), func() { _ = os.RemoveAll(dir) }, nil
	}
	if !strings.HasPrefix(db, "postgres://") && !strings.HasPrefix(db, "postgresql://") {
		return "", nil, errors.New(`-db must be "sqlite" or a postgres:// URL`)
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	schema := "herald_bench_" + hex.EncodeToString(suffix[:])
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(db)))
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		_ = admin.Close()
		return "", nil, fmt.Errorf("create schema: %w", err)
	}
	u, err := url.Parse(db)
	if err != nil {
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), func() {
		_, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		_ = admin.Close()
	}, nil
}

// cpuTime is the user + system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sampleHeap records the largest Go heap seen until stop closes.
func sampleHeap(peak *atomic.Uint64, stop <-chan struct{}) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// batchStats sums the dispatcher's store calls by operation.
type batchStats struct {
	delivery.NopObserver
	mu       sync.Mutex
	ops      map[string]*opStats
	receipts [5]atomic.Int64 // by delivery.ReceiptOutcome
}

// Receipt implements delivery.Observer.
func (b *batchStats) Receipt(_ string, o delivery.ReceiptOutcome) {
	if int(o) < len(b.receipts) {
		b.receipts[o].Add(1)
	}
}

type opStats struct {
	calls, items, errors int
	time                 time.Duration
}

// Batch implements delivery.Observer.
func (b *batchStats) Batch(op string, size int, d time.Duration, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.ops[op]
	if s == nil {
		s = &opStats{}
		b.ops[op] = s
	}
	s.calls++
	s.items += size
	s.time += d
	if err != nil {
		s.errors++
	}
}

func (b *batchStats) print(out io.Writer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	names := make([]string, 0, len(b.ops))
	for op := range b.ops {
		names = append(names, op)
	}
	sort.Strings(names)
	fmt.Fprintf(out, "receipts            ")
	for o := range b.receipts {
		fmt.Fprintf(out, "%s %d  ", delivery.ReceiptOutcome(o), b.receipts[o].Load())
	}
	fmt.Fprintln(out)
	for _, op := range names {
		s := b.ops[op]
		if s.items == 0 {
			continue
		}
		fmt.Fprintf(out, "store %-13s %6d calls, %7.1f items/call, %6.2f ms/call, %5.1f µs/item, %d errors\n", op, s.calls,
			float64(s.items)/float64(s.calls), float64(s.time.Microseconds())/1000/float64(s.calls),
			float64(s.time.Microseconds())/float64(s.items), s.errors)
	}
}

// machineCPU is the CPU time every process of the machine used so far
// (user, nice, system, irq and softirq time of /proc/stat), zero when it
// cannot be read.
func machineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}
