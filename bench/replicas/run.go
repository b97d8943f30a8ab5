package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
	"github.com/uptrace/bun/driver/pgdriver"
)

// result is what one run measured.
type result struct {
	round, replicas int
	messages        int
	delivered       int
	failed          int
	steadyRate      float64 // accepted submits a second over the whole seconds, the first and the last left out
	seconds         []int   // accepted in each whole second
	throttled       uint64  // ESME_RTHROTTLED answers for the bind limit
	duplicates      int     // accepted submit_sm beyond one per message
	elapsed         time.Duration
	// cpu and sent are each process's CPU over the run and the SMS it
	// moved to Sent (its herald_messages_total).
	cpu        []time.Duration
	sent       []int
	smscCPU    time.Duration
	pgBackends time.Duration // the backends of the run's database
	busy       float64       // share of the machine's CPU time busy over the run
}

// heraldCPU is the CPU of every herald process together.
func (r result) heraldCPU() time.Duration {
	var sum time.Duration
	for _, c := range r.cpu {
		sum += c
	}
	return sum
}

func (r result) printDetail(w io.Writer) {
	fmt.Fprintf(w, "round %d, %d replica(s): %d SMS final in %.1f s (%d delivered, %d failed); accepted %.0f/s over %d whole seconds %v; "+
		"%d throttled answers, %d duplicate submits; SMSC CPU %.0f µs a message; machine %.0f %% busy\n",
		r.round, r.replicas, r.messages, r.elapsed.Seconds(), r.delivered, r.failed, r.steadyRate, len(r.seconds), r.seconds,
		r.throttled, r.duplicates, perMessage(r.smscCPU, r.messages), 100*r.busy)
	for i, c := range r.cpu {
		fmt.Fprintf(w, "  process %d: %d sent, CPU %.2f s (%.0f µs a message it sent)\n", i+1, r.sent[i], c.Seconds(), perMessage(c, r.sent[i]))
	}
	fmt.Fprintf(w, "  herald together %.0f µs a message; the database's backends %.0f µs a message\n",
		perMessage(r.heraldCPU(), r.messages), perMessage(r.pgBackends, r.messages))
}

// runOnce runs one campaign through n herald serve processes on a new
// database and a new simulator.
func runOnce(ctx context.Context, o options, dir string, n int, suffix string) (result, error) {
	dbURL, dbName, drop, err := freshDatabase(ctx, o.db, "herald_replicas_"+suffix)
	if err != nil {
		return result{}, err
	}
	defer drop()
	runDir := filepath.Join(dir, suffix)
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return result{}, fmt.Errorf("run dir: %w", err)
	}
	sim, err := startSimulator(ctx, o, runDir)
	if err != nil {
		return result{}, err
	}
	defer sim.Stop()
	var hs []*drive.Server
	defer func() {
		for _, h := range hs {
			h.Stop()
		}
	}()
	for i := range n {
		pdir := filepath.Join(runDir, fmt.Sprintf("herald%d", i+1))
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return result{}, fmt.Errorf("process dir: %w", err)
		}
		h, err := drive.StartHerald(ctx, o.herald, dbURL, pdir, nil, o.timeout)
		if err != nil {
			return result{}, fmt.Errorf("herald serve %d: %w", i+1, err)
		}
		hs = append(hs, h)
	}
	hc := &http.Client{Timeout: o.timeout}
	c := &drive.Client{Base: hs[0].Base, HTTP: hc}
	if err := c.Provision(ctx, hs[0].AdminToken); err != nil {
		return result{}, err
	}
	// One connector for every process, its binds shared among them: the
	// same binds per process whatever their number.
	admin := [2]string{"Authorization", "Bearer " + hs[0].AdminToken}
	conn := fmt.Sprintf(`{"name":%q,"addr":%q,"systemId":"herald","binds":%d,"window":%d}`, connector, sim.addr, o.binds*n, o.window)
	if err := c.Do(ctx, "POST", "/admin/v1/smpp-connectors", admin, []byte(conn), http.StatusCreated, nil); err != nil {
		return result{}, err
	}
	route := fmt.Sprintf(`{"position":1,"connectors":[{"name":%q}]}`, connector)
	if err := c.Do(ctx, "POST", "/admin/v1/routes", admin, []byte(route), http.StatusCreated, nil); err != nil {
		return result{}, err
	}
	if err := waitBinds(ctx, o, hc, hs, sim); err != nil {
		return result{}, err
	}
	id, _, _, err := c.BulkToReady(ctx, drive.BulkBody(c.TemplateID, o.messages), o.timeout)
	if err != nil {
		return result{}, err
	}
	pids := []int{sim.Pid()}
	for _, h := range hs {
		pids = append(pids, h.Cmd.Process.Pid)
	}
	before, err := cpuTimes(pids)
	if err != nil {
		return result{}, err
	}
	pgBefore, err := backendCPU(dbName)
	if err != nil {
		return result{}, err
	}
	busyBefore, err := machineCPU()
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	if err := c.API(ctx, "POST", "/campaigns/"+id+"/start", nil, http.StatusOK, nil); err != nil {
		return result{}, err
	}
	delivered, failed, err := c.WaitFinal(ctx, id, o.timeout)
	if err != nil {
		return result{}, err
	}
	elapsed := time.Since(start)
	after, err := cpuTimes(pids)
	if err != nil {
		return result{}, err
	}
	pgAfter, err := backendCPU(dbName)
	if err != nil {
		return result{}, err
	}
	busyAfter, err := machineCPU()
	if err != nil {
		return result{}, err
	}
	res := result{replicas: n, messages: o.messages, delivered: delivered, failed: failed, elapsed: elapsed,
		smscCPU: after[0] - before[0], busy: busyAfter.since(busyBefore)}
	for pid, cpu := range pgAfter {
		res.pgBackends += cpu - pgBefore[pid] // a backend first seen at the end counts from zero
	}
	for i, h := range hs {
		res.cpu = append(res.cpu, after[i+1]-before[i+1])
		sent, err := sentCount(ctx, hc, h.Base)
		if err != nil {
			return result{}, err
		}
		res.sent = append(res.sent, sent)
	}
	if err := sim.measure(ctx, hc, &res); err != nil {
		return result{}, err
	}
	return res, nil
}

// waitBinds waits until the SMSC has every process's binds and each
// process its own share: the processes count each other in through their
// heartbeats within a few seconds of starting, so the wait lasts at least
// o.settle and ends once the counts held for two seconds.
func waitBinds(ctx context.Context, o options, hc *http.Client, hs []*drive.Server, sim *simulator) error {
	deadline := time.Now().Add(o.timeout)
	settled := time.Now().Add(o.settle)
	var held time.Time
	for {
		ok := true
		st, err := sim.stats(ctx, hc)
		if err != nil {
			return err
		}
		if st.Connections != o.binds*len(hs) {
			ok = false
		}
		for _, h := range hs {
			up, err := bindsUp(ctx, hc, h)
			if err != nil {
				return err
			}
			if up != o.binds {
				ok = false
			}
		}
		switch {
		case !ok:
			held = time.Time{}
		case held.IsZero():
			held = time.Now()
		case time.Since(held) >= 2*time.Second && time.Now().After(settled):
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("binds not settled at %d a process: the SMSC has %d sessions", o.binds, st.Connections)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// connector names the connector of the runs.
const connector = "replicas"

// bindsUp reads the binds h has up on the connector (none until it has
// loaded it).
func bindsUp(ctx context.Context, hc *http.Client, h *drive.Server) (int, error) {
	c := &drive.Client{Base: h.Base, HTTP: hc}
	var out struct {
		State *struct {
			BindsUp int `json:"bindsUp"`
		} `json:"state"`
	}
	if err := c.Do(ctx, "GET", "/admin/v1/smpp-connectors/"+connector, [2]string{"Authorization", "Bearer " + h.AdminToken}, nil, http.StatusOK, &out); err != nil {
		return 0, err
	}
	if out.State == nil {
		return 0, nil
	}
	return out.State.BindsUp, nil
}

// sentCount reads how many SMS a process moved to Sent from its /metrics.
func sentCount(ctx context.Context, hc *http.Client, base string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "herald_messages_total{") && strings.Contains(line, `channel="Smpp"`) && strings.Contains(line, `status="Sent"`) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				return 0, fmt.Errorf("metrics %q: %w", line, err)
			}
			return int(v), nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	return 0, nil
}

// simulator is herald simulate smsc in its own process, with its control
// API.
type simulator struct {
	drive.Child
	addr, control string
}

// startSimulator starts herald simulate smsc limiting each bind to
// o.bindRate submits a second.
func startSimulator(ctx context.Context, o options, dir string) (*simulator, error) {
	addr, err := drive.FreeAddr()
	if err != nil {
		return nil, err
	}
	control, err := drive.FreeAddr()
	if err != nil {
		return nil, err
	}
	s := &simulator{addr: addr, control: control}
	cmd := exec.CommandContext(ctx, o.herald, "simulate", "smsc", "-addr", addr, "-control", control,
		"-receipt-delay", o.receiptDelay.String(), "-bind-rate", fmt.Sprint(o.bindRate))
	if err := s.Start(cmd, filepath.Join(dir, "smsc.log"), "SMSC simulator listening", o.timeout); err != nil {
		return nil, fmt.Errorf("herald simulate smsc: %w", err)
	}
	return s, nil
}

// simStats is the part of the simulator's GET /stats read here.
type simStats struct {
	Connections int
	Accepted    uint64
	RateLimited uint64
}

func (s *simulator) stats(ctx context.Context, hc *http.Client) (simStats, error) {
	var st simStats
	err := s.get(ctx, hc, "/stats", &st)
	return st, err
}

func (s *simulator) get(ctx context.Context, hc *http.Client, path string, out any) error {
	c := &drive.Client{Base: "http://" + s.control, HTTP: hc}
	return c.Do(ctx, "GET", path, [2]string{}, nil, http.StatusOK, out)
}

// measure reads the simulator's counters into res: the submits it accepted
// in each second, those beyond one per message, its throttled answers.
func (s *simulator) measure(ctx context.Context, hc *http.Client, res *result) error {
	st, err := s.stats(ctx, hc)
	if err != nil {
		return err
	}
	var seconds []struct{ Accepted int }
	if err := s.get(ctx, hc, "/rate", &seconds); err != nil {
		return err
	}
	sum := 0
	for i, sec := range seconds {
		if i > 0 && i < len(seconds)-1 {
			res.seconds = append(res.seconds, sec.Accepted)
			sum += sec.Accepted
		}
	}
	if len(res.seconds) == 0 {
		return fmt.Errorf("the campaign lasted under three seconds at the SMSC: %d per second", len(seconds))
	}
	res.steadyRate = float64(sum) / float64(len(res.seconds))
	res.throttled = st.RateLimited
	res.duplicates = max(int(st.Accepted)-res.messages, 0)
	return nil
}

// freshDatabase creates database name through the server of dbURL and
// returns its URL and a func that drops it.
func freshDatabase(ctx context.Context, dbURL, name string) (string, string, func(), error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", "", nil, fmt.Errorf("parse database URL: %w", err)
	}
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dbURL)))
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		_ = admin.Close()
		return "", "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u.Path = "/" + name
	return u.String(), name, func() {
		_, _ = admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		_ = admin.Close()
	}, nil
}

func cpuTimes(pids []int) ([]time.Duration, error) {
	out := make([]time.Duration, len(pids))
	for i, pid := range pids {
		var err error
		if out[i], err = drive.CPUTime(pid); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// backendCPU returns the CPU of each Postgres backend connected to
// database db, by pid, from the process titles in /proc ("postgres:
// [CLUSTER:] USER DB HOST ...").
func backendCPU(db string) (map[int]time.Duration, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("read /proc: %w", err)
	}
	out := map[int]time.Duration{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue // gone, or not ours to read
		}
		title, ok := strings.CutPrefix(strings.TrimRight(strings.ReplaceAll(string(cmdline), "\x00", " "), " "), "postgres: ")
		if !ok {
			continue
		}
		f := strings.Fields(title)
		if len(f) > 0 && strings.HasSuffix(f[0], ":") {
			f = f[1:] // the cluster's name ("15/main:")
		}
		if len(f) < 2 || f[1] != db {
			continue
		}
		if cpu, err := drive.CPUTime(pid); err == nil {
			out[pid] = cpu
		}
	}
	return out, nil
}

// cpuJiffies is the machine's CPU time from /proc/stat, busy and all.
type cpuJiffies struct{ busy, total uint64 }

// since is the busy share of the CPU time between j0 and j.
func (j cpuJiffies) since(j0 cpuJiffies) float64 {
	if j.total <= j0.total {
		return 0
	}
	return float64(j.busy-j0.busy) / float64(j.total-j0.total)
}

// machineCPU reads the first line of /proc/stat.
func machineCPU() (cpuJiffies, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuJiffies{}, fmt.Errorf("read /proc/stat: %w", err)
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return cpuJiffies{}, fmt.Errorf("read /proc/stat: %w", err)
	}
	var j cpuJiffies
	// user nice system idle iowait irq softirq steal; guest time is
	// already in user.
	fields := strings.Fields(line)
	for i, v := range fields[1:min(len(fields), 9)] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return cpuJiffies{}, fmt.Errorf("parse /proc/stat: %w", err)
		}
		j.total += n
		if i != 3 && i != 4 { // idle, iowait
			j.busy += n
		}
	}
	return j, nil
}
