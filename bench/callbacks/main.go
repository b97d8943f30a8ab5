// Command callbacks measures how fast Herald stores chat provider
// callbacks: signed status callbacks (delivered, then seen, for every
// message of a chat campaign) POSTed over loopback HTTP by concurrent
// senders to the real callback endpoint (chat.CallbackHandler over
// delivery.ChatEvents, as the herald binary mounts it) on a real store.
// It reports callbacks stored per second and checks that every message
// ended Seen.
//
//	go build -o /tmp/herald-callbacks ./bench/callbacks
//	/tmp/herald-callbacks -db sqlite
//	/tmp/herald-callbacks -db 'postgres://postgres@127.0.0.1:5432/herald_cb?sslmode=disable'
//
// With -db sqlite the database is a new file in a temporary directory; a
// Postgres database is used as it is (give it an empty one). The senders
// run in this process too: the CPU figure covers both sides. The process
// runs with the herald binary's collector settings (GOGC=200,
// GOMEMLIMIT=200MiB) unless the environment sets GOGC or GOMEMLIMIT.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/gctune"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/transport/chat"
)

type options struct {
	db       string
	messages int
	workers  int
	timeout  time.Duration
	// cpuprofile names a file for a CPU profile of the callbacks' run.
	cpuprofile string
}

func main() {
	gctune.Apply(os.Getenv) // as the herald binary runs
	var o options
	flag.StringVar(&o.db, "db", "sqlite", `"sqlite" (a new file) or a postgres:// URL of an empty database`)
	flag.IntVar(&o.messages, "messages", 50_000, "chat messages; each gets a delivered and a seen callback")
	flag.IntVar(&o.workers, "workers", 64, "concurrent callback senders")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the run")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the callbacks' run to this file")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "callbacks:", err)
		os.Exit(1)
	}
}

const secret = "bench-callback-secret"

func run(ctx context.Context, o options, out io.Writer) error {
	dbURL := o.db
	if dbURL == "sqlite" {
		dir, err := os.MkdirTemp("", "herald-callbacks-")
		if err != nil {
			return fmt.Errorf("temp dir: %w", err)
		}
		defer os.RemoveAll(dir)
		dbURL = "sqlite://" + filepath.Join(dir, "herald.db")
	}
	store, err := sqlstore.Open(ctx, dbURL, sqlstore.Config{})
	if err != nil {
		return err
	}
	defer store.Close()
	c, msgs, err := prepare(ctx, store, o.messages)
	if err != nil {
		return err
	}

	events := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: store})
	srv := httptest.NewServer(chat.CallbackHandler(chat.CallbackConfig{Secret: secret, Reporter: delivery.Reports{Chat: events}}))
	defer srv.Close()

	// Every body signed beforehand: delivered for all, then seen for all.
	type signed struct {
		body []byte
		sig  string
	}
	var bodies []signed
	base := time.Now()
	for _, status := range []string{"delivered", "seen"} {
		for i, m := range msgs {
			ts := base.Add(time.Duration(i) * time.Microsecond).UnixMilli()
			if status == "seen" {
				ts += 1000
			}
			b := fmt.Appendf(nil, `{"event":"status","message_token":"%d","tracking_data":"%s","status":"%s","error_code":0,"timestamp":%d,"phone_number":"%s"}`,
				1_000_000+i, m.ID, status, ts, m.Phone)
			bodies = append(bodies, signed{b, chat.Sign(secret, b)})
		}
	}

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.workers, MaxConnsPerHost: o.workers}}
	var next, failed atomic.Int64
	var firstErr error
	var errOnce sync.Once
	cpu0 := cpuTime()
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) || ctx.Err() != nil {
					return
				}
				if err := post(ctx, client, srv.URL+"/", bodies[i].body, bodies[i].sig); err != nil {
					failed.Add(1)
					errOnce.Do(func() { firstErr = err })
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	if firstErr != nil {
		return fmt.Errorf("%d callbacks failed, the first: %w", failed.Load(), firstErr)
	}

	got, err := store.GetCampaign(ctx, c.CompanyID, c.ID)
	if err != nil {
		return fmt.Errorf("read the campaign: %w", err)
	}
	if got.Counts.Seen != len(msgs) {
		return fmt.Errorf("after the callbacks the campaign counts %+v, want all %d Seen", got.Counts, len(msgs))
	}
	n := len(bodies)
	fmt.Fprintf(out, "database            %s\n", redact(dbURL))
	fmt.Fprintf(out, "callbacks           %d (%d messages, delivered then seen), %d senders\n", n, len(msgs), o.workers)
	fmt.Fprintf(out, "elapsed             %v\n", elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "throughput          %.0f callbacks/s\n", float64(n)/elapsed.Seconds())
	fmt.Fprintf(out, "cpu (both sides)    %.1f µs/callback\n", float64(cpu.Microseconds())/float64(n))
	fmt.Fprintf(out, "check               all %d messages Seen\n", len(msgs))
	fmt.Fprintf(out, "machine             %d CPUs, %s %s/%s, %s\n", runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, gctune.Describe())
	return nil
}

// post sends one callback and requires 200.
func post(ctx context.Context, c *http.Client, url string, body []byte, sig string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(chat.SignatureHeader, sig)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return nil
}

// prepare writes a company and an in-progress chat campaign of n messages,
// all Sent.
func prepare(ctx context.Context, s *sqlstore.Store, n int) (messaging.Campaign, []*messaging.Message, error) {
	now := time.Now().UTC()
	ids := messaging.NewIDGenerator(time.Now)
	co := messaging.Company{ID: ids.New(), Name: "Bench " + strconv.FormatInt(now.UnixNano(), 36), Active: true, CreatedAt: now}
	if err := s.CreateCompany(ctx, &co); err != nil {
		return messaging.Campaign{}, nil, fmt.Errorf("create company: %w", err)
	}
	c := messaging.Campaign{ID: ids.New(), CompanyID: co.ID, Name: "callbacks", Channel: messaging.ChannelChat,
		Mode: messaging.ModeTransactional, Status: messaging.CampaignInProgress, MessageType: messaging.TypeSimpleText,
		CreatedAt: now, UpdatedAt: now, StartedAt: &now}
	if err := s.CreateCampaign(ctx, &c, math.MaxInt32); err != nil {
		return messaging.Campaign{}, nil, fmt.Errorf("create campaign: %w", err)
	}
	msgs := make([]*messaging.Message, n)
	for i := range msgs {
		msgs[i] = &messaging.Message{ID: ids.New(), CompanyID: co.ID, CampaignID: c.ID, Channel: messaging.ChannelChat,
			Phone: fmt.Sprintf("99890%07d", i), Content: "Hello", Status: messaging.StatusSent, SentAt: &now,
			DueAt: now, CreatedAt: now, UpdatedAt: now}
	}
	for start := 0; start < n; start += 10_000 {
		if err := s.AdmitMessages(ctx, co.ID, msgs[start:min(start+10_000, n)], math.MaxInt32); err != nil {
			return messaging.Campaign{}, nil, fmt.Errorf("write messages: %w", err)
		}
	}
	return c, msgs, nil
}

// cpuTime is the user and system time of this process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redact hides the password of a database URL.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}
