package smsroute

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/routing"
	"github.com/heraldhq/herald/transport/smpp"
)

// SMPP adapts the SMPP adapter's Client to the router.
type SMPP struct{ *smpp.Client }

// Up implements Client.
func (c SMPP) Up() bool { return c.Stats().Bound }

// State implements Client.
func (c SMPP) State() routing.State {
	st := c.Client.State()
	out := routing.State{Binds: st.Binds, BindsUp: st.BindsUp, WindowInUse: st.WindowInUse, Submits: st.Submits,
		Errors: st.SubmitErrors + st.BindFailures}
	for _, e := range []smpp.TimedError{st.LastBindError, st.LastSessionLost, st.LastSubmitError} {
		if e.Err != nil && e.At.After(out.LastErrorAt) {
			out.LastError, out.LastErrorAt = e.Err.Error(), e.At
		}
	}
	return out
}

// Close implements Client.
func (c SMPP) Close(ctx context.Context) error { return c.Client.Close(ctx) }

// DialSMPP returns a Dial that makes an SMPP client for a connector, on
// base (its handlers, logger and validity) with the connector's settings.
func DialSMPP(base smpp.Config) func(c routing.Connector) (Client, error) {
	return func(c routing.Connector) (Client, error) {
		cfg := base
		if h := base.ReceiptHandler; h != nil {
			name := c.Name
			cfg.ReceiptHandler = func(ctx context.Context, r delivery.Receipt) error {
				r.ProviderID = PartID(name, r.ProviderID)
				return h(ctx, r)
			}
		}
		cfg.Addr, cfg.SystemID, cfg.Password, cfg.SystemType = c.Addr, c.SystemID, c.Password, c.SystemType
		cfg.Window, cfg.MaxPerSecond, cfg.EnquireLink = c.Window, c.MaxPerSecond, c.EnquireLink
		cfg.SubmitIDFormat, cfg.ReceiptIDFormat = idFormat(c.SubmitIDFormat), idFormat(c.ReceiptIDFormat)
		cfg.Binds, cfg.Connector = c.Binds, c.Name
		if c.BindType == routing.BindTransmitter {
			cfg.BindType = smpp.BindTransmitter
		}
		cfg.SourceTON, cfg.SourceNPI, cfg.DestTON, cfg.DestNPI = octet(c.SourceTON), octet(c.SourceNPI), octet(c.DestTON), octet(c.DestNPI)
		if c.TLS {
			cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
			if c.CACert != "" {
				pool := x509.NewCertPool()
				if !pool.AppendCertsFromPEM([]byte(c.CACert)) {
					return nil, fmt.Errorf("smsroute: connector %s: caCert holds no PEM certificate", c.Name)
				}
				cfg.TLS.RootCAs = pool
			}
		}
		if cfg.Logger != nil {
			cfg.Logger = cfg.Logger.With("connector", c.Name)
		}
		cl, err := smpp.New(cfg)
		if err != nil {
			return nil, err
		}
		return SMPP{cl}, nil
	}
}

// idFormat maps a connector's id format to the adapter's.
func idFormat(f string) smpp.IDFormat {
	switch f {
	case routing.IDDecimal:
		return smpp.IDDecimal
	case routing.IDHex:
		return smpp.IDHex
	}
	return smpp.IDAsSent
}

// IDFormatName is the connector setting of an adapter id format.
func IDFormatName(f smpp.IDFormat) string {
	switch f {
	case smpp.IDDecimal:
		return routing.IDDecimal
	case smpp.IDHex:
		return routing.IDHex
	}
	return routing.IDAsSent
}

// SMPPStats adds up the counters of every running SMPP connector: Bound
// when one is bound.
func (r *Router) SMPPStats() smpp.Stats {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var sum smpp.Stats
	for _, cn := range r.conns {
		c, ok := cn.client.(SMPP)
		if !ok {
			continue
		}
		st := c.Stats()
		sum.Bound = sum.Bound || st.Bound
		sum.Binds += st.Binds
		sum.Rebinds += st.Rebinds
		sum.BindFailures += st.BindFailures
		sum.Submits += st.Submits
		sum.SubmitErrors += st.SubmitErrors
		sum.Throttled += st.Throttled
		sum.Receipts += st.Receipts
		sum.ReceiptErrors += st.ReceiptErrors
		sum.BadReceipts += st.BadReceipts
		sum.MOMessages += st.MOMessages
		sum.WindowInUse += st.WindowInUse
		sum.Window += st.Window
		sum.ReceiptsInUse += st.ReceiptsInUse
	}
	return sum
}

// octet converts an optional TON or NPI.
func octet(v *int) *uint8 {
	if v == nil {
		return nil
	}
	b := uint8(*v)
	return &b
}
