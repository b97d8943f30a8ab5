package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
)

// chatResult is what one chat run measured.
type chatResult struct {
	messages  int
	callbacks bool
	elapsed   time.Duration // from the start to every message Sent (no callbacks) or final
	cpu       time.Duration // herald's
	simCPU    time.Duration
	done      int // messages Sent, or Delivered or Seen
	failed    int
}

func (r chatResult) rate() float64 { return float64(r.messages) / r.elapsed.Seconds() }

func (r chatResult) print(w io.Writer, sendsAlone chatResult) {
	what := "sends alone (no callbacks): every message Sent"
	if r.callbacks {
		what = "with callbacks: every message Delivered or Seen"
	}
	fmt.Fprintf(w, "herald serve chat  %s: %d in %v: %.0f msgs/s; CPU per message %.1f µs (simulator %.1f µs); done %d, failed %d",
		what, r.messages, r.elapsed.Round(time.Millisecond), r.rate(), perMessage(r.cpu, r.messages), perMessage(r.simCPU, r.messages), r.done, r.failed)
	if r.callbacks && sendsAlone.messages > 0 {
		fmt.Fprintf(w, "; %.2f x the sends alone", r.rate()/sendsAlone.rate())
	}
	fmt.Fprintln(w)
}

// runChat runs the product with a bulk chat campaign of SimpleText
// messages against herald simulate chat in its own process. With
// callbacks the simulator posts each message's delivered callback
// o.receiptDelay after accepting it, and its seen callback as long after
// that, to Herald's /callbacks/chat, and the clock runs until every
// message is Delivered or Seen (or Failed: numbers ending 0008, 0009 and
// 0010 are refused); without, until every message is Sent (or Failed), as
// Herald's metrics count them.
func runChat(ctx context.Context, o options, dir, db string, callbacks bool) (chatResult, error) {
	simAddr, err := drive.FreeAddr()
	if err != nil {
		return chatResult{}, err
	}
	heraldAddr, err := drive.FreeAddr()
	if err != nil {
		return chatResult{}, err
	}
	const token, secret = "bench-token", "bench-secret"
	args := []string{"simulate", "chat", "-addr", simAddr, "-token", token, "-delivered-delay", o.receiptDelay.String()}
	if callbacks {
		args = append(args, "-callback-url", "http://"+heraldAddr+"/callbacks/chat", "-callback-secret", secret)
	}
	var sim drive.Child
	if err := sim.Start(exec.CommandContext(ctx, o.herald, args...), filepath.Join(dir, "chatsim.log"), "chat provider simulator at", o.timeout); err != nil {
		return chatResult{}, fmt.Errorf("the chat simulator: %w", err)
	}
	defer sim.Stop()

	dbURL := db
	if db == "sqlite" {
		dbURL = "sqlite://" + filepath.Join(dir, fmt.Sprintf("herald-chat-%d.db", time.Now().UnixNano()))
	}
	srv, err := drive.StartHerald(ctx, o.herald, dbURL, dir, []string{
		"HERALD_ADDR=" + heraldAddr, "HERALD_CHAT_URL=http://" + simAddr, "HERALD_CHAT_TOKEN=" + token, "HERALD_CHAT_CALLBACK_SECRET=" + secret,
	}, o.timeout)
	if err != nil {
		return chatResult{}, err
	}
	defer srv.Stop()
	c := &drive.Client{Base: srv.Base, HTTP: &http.Client{Timeout: o.timeout}}
	if err := c.ProvisionChat(ctx, srv.AdminToken); err != nil {
		return chatResult{}, err
	}
	id, _, _, err := c.BulkToReadyAt(ctx, "/api/v1/chat/send", drive.BulkBody(c.TemplateID, o.messages), o.timeout)
	if err != nil {
		return chatResult{}, err
	}
	pid := srv.Cmd.Process.Pid
	before, err := cpuTimes(pid, sim.Pid())
	if err != nil {
		return chatResult{}, err
	}
	start := time.Now()
	if err := c.API(ctx, "POST", "/campaigns/"+id+"/start", nil, http.StatusOK, nil); err != nil {
		return chatResult{}, err
	}
	res := chatResult{messages: o.messages, callbacks: callbacks}
	for {
		if callbacks {
			var camp struct {
				DeliveredCount int `json:"deliveredCount"`
				FailedCount    int `json:"failedCount"`
			}
			if err := c.API(ctx, "GET", "/campaigns/"+id, nil, http.StatusOK, &camp); err != nil {
				return chatResult{}, err
			}
			res.done, res.failed = camp.DeliveredCount, camp.FailedCount
		} else {
			counts, err := chatMetrics(ctx, c)
			if err != nil {
				return chatResult{}, err
			}
			res.done, res.failed = counts["Sent"], counts["Failed"]
		}
		if res.done+res.failed >= o.messages {
			break
		}
		if time.Since(start) > o.timeout {
			return chatResult{}, fmt.Errorf("after %v: %d done, %d failed of %d: %w", o.timeout, res.done, res.failed, o.messages, drive.ErrTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	res.elapsed = time.Since(start)
	after, err := cpuTimes(pid, sim.Pid())
	if err != nil {
		return chatResult{}, err
	}
	res.cpu, res.simCPU = after[0]-before[0], after[1]-before[1]
	return res, nil
}

// chatMetrics reads, from Herald's /metrics, how many chat messages the
// dispatcher and the callbacks moved to each status.
func chatMetrics(ctx context.Context, c *drive.Client) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	const prefix = `herald_messages_total{channel="Chat",status="`
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		status, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: %q: %w", sc.Text(), err)
		}
		out[status] = int(f)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return out, nil
}
