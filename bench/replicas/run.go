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
	cpu  []time.Duration
	sent []int
	// perSecond is, with -trace, the SMS each process moved to Sent in
	// each second of the run.
	perSecond  [][]int
	smscCPU    time.Duration
	pgBackends time.Duration // the backends of the run's database
	busy       float64       // share of the machine's CPU time busy over the run
	deadlocks  int64         // detected in the run's database (pg_stat_database)
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
		"%d throttled answers, %d duplicate submits; %d deadlocks in the database; SMSC CPU %.0f µs a message; machine %.0f %% busy\n",
		r.round, r.replicas, r.messages, r.elapsed.Seconds(), r.delivered, r.failed, r.steadyRate, len(r.seconds), r.seconds,
		r.throttled, r.duplicates, r.deadlocks, perMessage(r.smscCPU, r.messages), 100*r.busy)
	for i, c := range r.cpu {
		fmt.Fprintf(w, "  process %d: %d sent, CPU %.2f s (%.0f µs a message it sent)\n", i+1, r.sent[i], c.Seconds(), perMessage(c, r.sent[i]))
	}
	fmt.Fprintf(w, "  herald together %.0f µs a message; the database's backends %.0f µs a message\n",
		perMessage(r.heraldCPU(), r.messages), perMessage(r.pgBackends, r.messages))
	for i, sec := range r.perSecond {
		fmt.Fprintf(w, "  second %d: sent by each process %v\n", i+1, sec)
	}
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
		var env []string
		if o.receipts == "own" {
			// The default connector, the same in every process but for
			// its system_id: the SMSC returns each receipt on a session
			// of the account that submitted it.
			env = []string{"HERALD_SMPP_ADDR=" + sim.addr, fmt.Sprintf("HERALD_SMPP_SYSTEM_ID=herald%d", i+1), "HERALD_SMPP_PASSWORD=secret",
				fmt.Sprintf("HERALD_SMPP_WINDOW=%d", o.window), fmt.Sprintf("HERALD_SMPP_BINDS=%d", o.binds*n)}
		}
		h, err := drive.StartHerald(ctx, o.herald, dbURL, pdir, env, o.timeout)
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
	if err := addConnector(ctx, o, c, hs[0].AdminToken, sim.addr, n); err != nil {
		return result{}, err
	}
	if err := waitBinds(ctx, o, hc, hs, sim); err != nil {
		return result{}, err
	}
	id, _, _, err := c.BulkToReady(ctx, drive.BulkBody(c.TemplateID, o.messages), o.timeout)
	if err != nil {
		return result{}, err
	}
	return measureRun(ctx, o, c, hc, hs, sim, dbURL, dbName, id, n)
}

// addConnector sets up, with o.receipts "shared", one connector for every
// process through the admin API, its binds shared among them: the same
// binds per process whatever their number.
func addConnector(ctx context.Context, o options, c *drive.Client, token, addr string, n int) error {
	if o.receipts == "own" {
		return nil
	}
	admin := [2]string{"Authorization", "Bearer " + token}
	conn := fmt.Sprintf(`{"name":%q,"addr":%q,"systemId":"herald","binds":%d,"window":%d}`, connector, addr, o.binds*n, o.window)
	if err := c.Do(ctx, "POST", "/admin/v1/smpp-connectors", admin, []byte(conn), http.StatusCreated, nil); err != nil {
		return err
	}
	route := fmt.Sprintf(`{"position":1,"connectors":[{"name":%q}]}`, connector)
	return c.Do(ctx, "POST", "/admin/v1/routes", admin, []byte(route), http.StatusCreated, nil)
}

// measureRun starts campaign id and measures its delivery.
func measureRun(ctx context.Context, o options, c *drive.Client, hc *http.Client, hs []*drive.Server, sim *simulator,
	dbURL, dbName, id string, n int) (result, error) {
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
	stopTrace := func() [][]int { return nil }
	if o.trace {
		stopTrace = traceSent(ctx, hc, hs)
	}
	delivered, failed, err := c.WaitFinal(ctx, id, o.timeout)
	perSecond := stopTrace()
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
		perSecond: perSecond, smscCPU: after[0] - before[0], busy: busyAfter.since(busyBefore)}
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
	if res.deadlocks, err = deadlocks(ctx, dbURL, dbName); err != nil {
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
			if o.receipts == "own" {
				break // the default connector is not listed by the admin API
			}
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

// traceSent reads each process's Sent count every second until the
// returned func is called, which returns what each process sent in each
// second.
func traceSent(ctx context.Context, hc *http.Client, hs []*drive.Server) func() [][]int {
	stop, done := make(chan struct{}), make(chan [][]int, 1)
	go func() {
		var out [][]int
		last := make([]int, len(hs))
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				done <- out
				return
			case <-t.C:
			}
			sec := make([]int, len(hs))
			for i, h := range hs {
				n, err := sentCount(ctx, hc, h.Base)
				if err != nil {
					continue
				}
				sec[i], last[i] = n-last[i], n
			}
			out = append(out, sec)
		}
	}()
	return func() [][]int { close(stop); return <-done }
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

// deadlocks reads the deadlocks Postgres detected in database db. The
// server publishes a backend's counts within about a second: it waits that
// long first.
func deadlocks(ctx context.Context, dbURL, db string) (int64, error) {
	time.Sleep(1500 * time.Millisecond)
	conn := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dbURL)))
	defer conn.Close()
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT deadlocks FROM pg_stat_database WHERE datname = $1", db).Scan(&n); err != nil {
		return 0, fmt.Errorf("deadlocks of %s: %w", db, err)
	}
	return n, nil
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
		if !isBackendOf(string(cmdline), db) {
			continue
		}
		if cpu, err := drive.CPUTime(pid); err == nil {
			out[pid] = cpu
		}
	}
	return out, nil
}

// isBackendOf tells whether a process's command line (/proc/PID/cmdline)
// is the title of a Postgres backend connected to database db.
func isBackendOf(cmdline, db string) bool {
	title, ok := strings.CutPrefix(strings.TrimRight(strings.ReplaceAll(cmdline, "\x00", " "), " "), "postgres: ")
	if !ok {
		return false
	}
	f := strings.Fields(title)
	if len(f) > 0 && strings.HasSuffix(f[0], ":") {
		f = f[1:] // the cluster's name ("15/main:")
	}
	return len(f) >= 2 && f[1] == db
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
