// Package smppwire is the SMPP 3.4 wire shared by Herald's SMPP client
// (transport/smpp) and its SMSC simulator (transport/smscsim): reading a
// PDU from a stream with its length bound, encoding PDUs, and the writer
// goroutine of a connection. Both ends encode and decode PDU bodies with
// github.com/linxGnu/gosmpp's pdu package; what they do with a PDU (the
// session, the simulated SMSC) stays in their own packages.
//
// # Framing
//
// ReadFrame reads a PDU whole before anything decodes it: its
// command_length must lie between HeaderLen (16) and MaxPDULen (64 KiB),
// else ReadFrame returns ErrFraming right after the header, before
// anything is allocated for the body it declares, so a corrupt or hostile
// length costs at most 64 KiB and the connection is to be closed. A body
// gosmpp's decoders cannot read (some of them panic on malformed optional
// parameters) is an error of that PDU from Frame.Decode, never a crash.
// FuzzReadFrame checks this on any byte stream (go test -fuzz
// FuzzReadFrame; its corpus is under testdata/fuzz).
//
// # Encoding
//
// Encode marshals a gosmpp PDU; HeaderOnly and WithCString build the
// PDUs whose body is empty or one C-octet string (enquire_link, unbind,
// generic_nack, the responses) without going through gosmpp.
//
// # Writing
//
// A Writer owns the write side of one connection: any goroutine queues
// frames with Send, and Run, in a goroutine of its own, writes them
// through a 64 KiB buffer that it flushes whenever the queue runs dry, so
// that a burst of PDUs leaves in a few writes while a lone PDU is not
// held back. Send(nil) asks Run to flush what was queued before and
// return ErrCloseRequested, for a connection that ends after its last
// response (an unbind_resp, a refused bind).
package smppwire
