package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
	"github.com/linxGnu/gosmpp"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
)

// runBare times the bare client against a fresh SMSC of kind: it binds
// with gosmpp, submits o.messages SMS keeping o.window unanswered at most,
// and counts their receipts, keeping nothing else. It is the most an SMPP
// client can get from the SMSC on this machine, the baseline of the
// product's figures. This process's CPU is the client's.
func runBare(ctx context.Context, o options, kind, dir string) (result, error) {
	sm, err := startSMSC(ctx, o, kind, dir)
	if err != nil {
		return result{}, err
	}
	defer sm.Stop()

	window := make(chan struct{}, o.window)
	var receipts, failed atomic.Int64
	all := make(chan struct{})
	var submitErr atomic.Pointer[error]
	sess, err := gosmpp.NewSession(
		gosmpp.TRXConnector(gosmpp.NonTLSDialer, gosmpp.Auth{SMSC: sm.addr, SystemID: "bare", Password: "secret"}),
		gosmpp.Settings{
			ReadTimeout: 30 * time.Second, WriteTimeout: 10 * time.Second, EnquireLink: 10 * time.Second,
			OnPDU: func(p pdu.PDU, _ bool) {
				switch p := p.(type) {
				case *pdu.SubmitSMResp:
					if p.CommandStatus != data.ESME_ROK {
						failed.Add(1)
					}
					<-window
				case *pdu.DeliverSM: // answered by gosmpp
					if receipts.Add(1) == int64(o.messages) {
						close(all)
					}
				}
			},
			OnSubmitError: func(_ pdu.PDU, err error) { submitErr.CompareAndSwap(nil, &err) },
		}, -1)
	if err != nil {
		return result{}, fmt.Errorf("bind: %w", err)
	}
	defer sess.Close()

	cpu0 := selfCPU()
	before, err := cpuTimes(sm.Pid())
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	src := pdu.NewAddress()
	src.SetTon(5)
	src.SetNpi(0)
	if err := src.SetAddress("Bench"); err != nil {
		return result{}, fmt.Errorf("source address: %w", err)
	}
	for i := range o.messages {
		if e := submitErr.Load(); e != nil {
			return result{}, fmt.Errorf("submit: %w", *e)
		}
		req := pdu.NewSubmitSM().(*pdu.SubmitSM)
		req.SourceAddr = src
		dst := pdu.NewAddress()
		dst.SetTon(1)
		dst.SetNpi(1)
		if err := dst.SetAddress(fmt.Sprintf("4479%08d", i)); err != nil {
			return result{}, fmt.Errorf("destination address: %w", err)
		}
		req.DestAddr = dst
		if err := req.Message.SetMessageWithEncoding(fmt.Sprintf("Hello N%d, your code is 4711", i), data.GSM7BIT); err != nil {
			return result{}, fmt.Errorf("message: %w", err)
		}
		req.RegisteredDelivery = 1
		select {
		case window <- struct{}{}:
		case <-time.After(o.timeout):
			return result{}, fmt.Errorf("no submit_sm_resp within %v: %w", o.timeout, drive.ErrTimeout)
		}
		if err := sess.Transceiver().Submit(req); err != nil {
			return result{}, fmt.Errorf("submit: %w", err)
		}
	}
	select {
	case <-all:
	case <-time.After(o.timeout):
		return result{}, fmt.Errorf("%d of %d receipts: %w", receipts.Load(), o.messages, drive.ErrTimeout)
	}
	elapsed := time.Since(start)
	cpu := selfCPU() - cpu0
	after, err := cpuTimes(sm.Pid())
	if err != nil {
		return result{}, err
	}
	st, err := sm.stats()
	if err != nil {
		return result{}, err
	}
	return result{
		messages: o.messages, submitRate: st.rate(), finalRate: float64(o.messages) / elapsed.Seconds(), elapsed: elapsed,
		cpu: cpu, smscCPU: after[0] - before[0], delivered: o.messages - int(failed.Load()), failed: int(failed.Load()),
	}, nil
}

// selfCPU is the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
