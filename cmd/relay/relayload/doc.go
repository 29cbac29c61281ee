// Command relayload measures how many 4-player matches one relay process
// (cmd/relay) holds at 60 Hz: for each load of -levels it starts the relay
// (-relay, a built binary), opens that many matches by its admin call,
// and plays fake machines against it on loopback, each sending one
// envelope a tick as a real 4-player match's machine does (a sealed-size
// datagram to each of its 3 peers, made one plain and two reseal records
// by a relay.Client, -datagram bytes each) and checking that every peer
// receives it. It reads the relay's CPU time and resident memory from
// /proc, and writes the figures as JSON (-out). make relay-load runs it
// inside a network namespace of its own (relay-load.sh).
//
// The generator is one UDP socket bound to 0.0.0.0: it sends each
// machine's envelope from that machine's own address (127.1.x.y, with
// IP_PKTINFO) in batches (sendmmsg), and tells the receiver of each reply
// by its destination address (recvmmsg), so that 4,000 machines cost it
// two goroutines. Each machine sends at a phase of its own within the
// tick (16 steps), and puts its tick number and the time in its
// datagrams; a reply's latency is from that time to its arrival, and its
// excess the part after the relay's flush at the next multiple of the
// tick since the Unix epoch (the relay flushes every match then), so
// latency = the wait for that flush, up to a tick by design, + excess.
package main
