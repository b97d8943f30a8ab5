// Package smscsim is an SMSC simulator speaking SMPP 3.4 over TCP, for
// Herald's demo mode and for tests of SMPP clients. It decodes and encodes
// PDUs with github.com/linxGnu/gosmpp's pdu package, reads and writes them
// with package smppwire (the wire Herald's SMPP client uses too), and runs
// its own accept loop, one reader and one buffered writer goroutine per
// connection, and one dispatcher of delivery receipts.
//
// # Protocol
//
// It accepts bind_transmitter, bind_receiver and bind_transceiver (checking
// system_id and password when Config sets them: ESME_RINVSYSID,
// ESME_RINVPASWD, and the connection is closed), enquire_link and unbind.
// A submit_sm on a session bound as transmitter or transceiver is answered
// with a fresh message id per part (12 upper-case hexadecimal digits with
// leading zeros); anything else bound or not is ESME_RINVBNDSTS. Requests it
// does not serve get generic_nack ESME_RINVCMDID.
//
// # Limits
//
// Like a real SMSC it can limit its clients. Config.BindRate caps the
// submit_sm per second of each session (a token bucket holding a tenth of
// a second's worth, or, as Config.BindLimit says, fixed one-second windows
// of the wall clock or a sliding second): one beyond it is answered
// ESME_RTHROTTLED and not accepted. Config.MaxBindsPerSystemID caps the sessions bound at once
// with one system_id, and RefuseBinds refuses every bind for a while: such
// a bind is answered ESME_RBINDFAIL and its connection closed.
//
// # Receipts
//
// When registered_delivery asks for one (1: always; 2: on failure only), a
// deliver_sm receipt follows each accepted part after Config.ReceiptDelay,
// on a session bound as receiver or transceiver with the same system_id (or
// any receiving session when none has it). Its esm_class is 0x04, its text
//
//	id:<id> sub:001 dlvrd:<001|000> submit date:YYMMDDhhmm done date:YYMMDDhhmm stat:<STAT> err:<ERR> text:<first 20 characters>
//
// (FormatReceipt writes it) and it carries the receipted_message_id and
// message_state TLVs (unless Config.OmitReceiptTLVs). The outcome is chosen by the destination number:
//
//	ends in 0001: UNDELIV, err 001, message_state 5
//	ends in 0002: EXPIRED, err 002, message_state 3
//	ends in 0003: REJECTD, err 003, message_state 8
//	otherwise:    DELIVRD, err 000, message_state 2
//
// A receipt answered with a status other than ESME_ROK, or left unanswered
// when its connection ends, is sent again after Config.ResendDelay (so the
// receipts a client had not acknowledged when its connection dropped come
// again on its next bind). At most Config.ReceiptWindow receipts are
// unanswered on one connection. Config.ResendAcked makes it a buggy SMSC
// that, when a connection ends, also sends again (once) the receipts that
// were acknowledged on it.
//
// # Faults and records
//
// Faults (set in Config or at run time with SetFaults) make it throttle
// (ESME_RTHROTTLED to every Nth submit_sm or to an evenly spread fraction),
// answer every submit_sm with a given status, delay submit_sm_resp, or close
// the connection carrying the Nth submit_sm without answering it.
// DropConnections closes every connection at once; DropMidWindow makes
// each connection close as soon as it reads its next submit_sm, leaving
// unanswered (and not accepted) the submit_sm in flight on it.
//
// Stall (or Config.Stall) makes it hang while the TCP connections stay
// open: the submit_sm, enquire_link or bind requests it names are held
// unanswered, and receipts are kept back. Requests of other kinds are
// still answered, and may overtake the held ones. Resume serves the held
// requests in the order they came (a held submit_sm is accepted then and
// gets its receipt, as an SMSC catching up would) and sends receipts
// again; a connection that ends first drops its held requests, which the
// Server never accepted. A held submit_sm counts in InFlight.
//
// Stats counts what happened, including the most submit_sm ever unanswered at
// once; with Config.Record it also keeps every part received and the texts
// it reassembled from concatenated parts (Parts, Messages), and Counts
// tells how many times each text reached each destination, so that a test
// can find the messages delivered twice. SubmitsPerSecond counts the
// submit_sm accepted and throttled in each wall-clock second, so that a
// test can check the rate a client held. Config.OnSubmit sees every
// submit_sm answered, before its answer is written, for a log that
// outlives the simulator's process.
//
// # Control from another process
//
// ControlHandler serves all of the above over HTTP (JSON): stats, stall
// and resume, faults, dropping the connections (at once or mid-window),
// refusing binds, the submits per second, and the parts, messages and
// counts recorded. A program that runs the simulator in a process of
// its own can serve it on a loopback address, so
// that a fault test of another program drives the SMSC while that program
// talks to it.
//
// # Hostile input
//
// A command_length outside 16 bytes..64 KiB closes the connection before
// anything is allocated for the body it declares, and a PDU gosmpp cannot
// decode is refused, never a crash (smppwire's FuzzReadFrame checks
// this). FuzzReadSubmit checks that nothing panics serving any byte
// stream, and that the receipt of any accepted submit_sm reads back to its
// id and outcome.
package smscsim
