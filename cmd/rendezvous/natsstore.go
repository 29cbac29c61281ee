package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rewindgg/rewind/rtc/lobby"
)

// The NATS store keeps the lobby in JetStream, shared by every instance
// that connects to the same NATS servers: any instance serves any request
// of any match, and an instance that stops loses nothing.
//
//   - KV bucket rdv_matches: key <CODE>, the match (natsMatch, JSON):
//     seats and tokens, times, session id and secret, the wrong-token
//     count and lock. Changed by compare-and-set on its revision. At most
//     MaxMatches keys (the 503 of a full server).
//   - KV bucket rdv_full: key <CODE> while the match is full; its size is
//     the number of full matches.
//   - KV bucket rdv_addrs: key q.<addr>, the bytes of the address's
//     signals still queued (its bytes quota), changed by compare-and-set.
//   - Stream RDV_OWNERS: subject rdv.own.<addr>, one message for each
//     match the address created and that is not removed yet (the match
//     keeps its sequence). At most MaxMatchesPerIP a subject: the stream
//     refuses the one beyond (429 quota), atomically for every instance.
//   - Stream RDV_SIGNALS: subject rdv.sig.<CODE>.<seat>, one message a
//     signal (header Rdv-By: the sender's address), its stream sequence the
//     signal's Seq. At most queueLen messages a subject (the 429 of a full
//     queue), at most MaxQueuedBytes in all (the 503). A numbered signal
//     (lobby.Signal.ID) has the message ID <CODE>.<from>.<ID, 16 hex
//     digits>: the stream takes it once within sendDedup.
//   - Core subject rdv.wake.<CODE>: published after every change of a
//     match (a signal, a seat taken or left, its removal); each instance
//     subscribes to rdv.wake.* once and wakes its own long polls.
//
// Keys are removed by deleting their last message (no delete markers), so
// a bucket's message count is its number of keys. Expiry is decided here,
// on config.Now (the times are in the match); the buckets' and the
// stream's age limits only bound what a crash leaves behind.
const (
	natsMatches = "rdv_matches"
	natsFull    = "rdv_full"
	natsAddrs   = "rdv_addrs"
	natsRelays  = "rdv_relays" // the match relays' announcements (placement.go)
	natsSignals = "RDV_SIGNALS"
	natsOwners  = "RDV_OWNERS"
	sigPrefix   = "rdv.sig."
	ownPrefix   = "rdv.own."
	wakePrefix  = "rdv.wake."
	headerBy    = "Rdv-By"
	// sendDedup is how long the signal stream remembers a numbered
	// signal's ID (lobby.Signal.ID): a client sends one again within
	// seconds of losing its answer.
	sendDedup = 2 * time.Minute
	// natsOpTimeout bounds each exchange with NATS.
	natsOpTimeout = 3 * time.Second
	// natsRetries bounds the compare-and-set tries of one change.
	natsRetries = 32
	// matchValueMax bounds a match's value (8 seats' tokens and the rest
	// take under 1 KiB).
	matchValueMax = 2 << 10
)

// natsMatch is a match as stored. Times are Unix nanoseconds on the
// server's clock (config.Now).
type natsMatch struct {
	Seats       []natsSeat `json:"seats"`
	Taken       int        `json:"taken"`
	Created     int64      `json:"created"`
	Filled      int64      `json:"filled,omitempty"`
	SessionID   uint64     `json:"session"`
	Secret      []byte     `json:"secret"`
	Owner       string     `json:"owner"`     // the creator's address, as in rdv_addrs' keys and RDV_OWNERS' subjects
	OwnerSeq    uint64     `json:"owner_seq"` // its mark's sequence in RDV_OWNERS
	Fails       int        `json:"fails,omitempty"`
	FailedAt    int64      `json:"failed_at,omitempty"`
	LockedUntil int64      `json:"locked_until,omitempty"`
	Relayed     bool       `json:"relayed,omitempty"` // its seats signal only the match relay
	Placed      placement  `json:"placed,omitzero"`   // the relay it is placed on
}

type natsSeat struct {
	Token string `json:"token,omitempty"` // "" when free, or after its holder left a full match
	Left  bool   `json:"left,omitempty"`
}

func (m *natsMatch) full() bool { return m.Taken == len(m.Seats) }

// signalBody is a signal as stored: its Seq is the message's sequence.
type signalBody struct {
	From int    `json:"from"`
	Kind string `json:"kind"`
	Data string `json:"data"`
}

// bucket is a KV bucket and the stream under it (whose DeleteMsg removes
// a key without a marker, and whose size is the number of keys).
type bucket struct {
	kv     jetstream.KeyValue
	stream jetstream.Stream
}

// natsStore is the store (store.go) in NATS JetStream.
type natsStore struct {
	now        func() time.Time
	log        *slog.Logger
	maxMatches int
	maxQueued  int
	perAddr    usage
	openTTL    time.Duration
	fullTTL    time.Duration
	lockAfter  int
	lockFor    time.Duration
	storage    jetstream.StorageType
	replicas   int // of the buckets and streams; 0: 3 in a cluster, else 1
	relayTTL   time.Duration

	nc      *nats.Conn
	js      jetstream.JetStream
	sub     *nats.Subscription
	waiters *waiters
	embed   *embeddedNATS // nil with an external cluster
	events  chan bool     // tests: false when the connection is lost, true once it is back and the buckets are there
	opened  chan struct{} // closed once openNATSStore has set nc, js, sub and upAtOpen: the connection's callbacks wait for it
	// upAtOpen: the first connection was made by openNATSStore itself,
	// which makes the buckets then (ConnectHandler has nothing to do).
	upAtOpen bool
	// The changes of one address's queued bytes from this instance are
	// made one at a time (a stripe of addresses at a time): many players
	// behind one address would otherwise lose most compare-and-sets to
	// each other. Other instances' changes still race (and retry).
	charges [64]chargeStripe

	mu        sync.Mutex // guards what follows
	matches   *bucket
	full      *bucket
	addrs     *bucket
	signals   jetstream.Stream
	owners    jetstream.Stream
	relays    *bucket
	answered  map[seatKey]answeredAt // signals answered to acknowledging polls of this instance, not acknowledged yet
	lastSweep time.Time
	swept     int
}

type seatKey struct {
	code string
	seat int
}

// answeredAt is the newest Seq answered to a seat's acknowledging poll,
// and when.
type answeredAt struct {
	seq uint64
	at  time.Time
}

// openNATSStore connects to NATS (starting the embedded server first
// when cfg.NATSURL is empty) and makes the buckets and the stream if they
// are not there yet.
func openNATSStore(cfg *config) (*natsStore, error) {
	n := &natsStore{
		now:        cfg.Now,
		log:        cfg.Logger,
		maxMatches: cfg.MaxMatches,
		maxQueued:  cfg.MaxQueuedBytes,
		perAddr:    usage{matches: cfg.MaxMatchesPerIP, bytes: cfg.MaxQueuedPerIP},
		openTTL:    cfg.OpenTTL,
		fullTTL:    cfg.FullTTL,
		relayTTL:   cfg.RelayTTL,
		lockAfter:  cfg.LockAfter,
		lockFor:    cfg.LockFor,
		storage:    jetstream.FileStorage,
		replicas:   cfg.NATSReplicas,
		waiters:    newWaiters(),
		events:     make(chan bool, 8),
		opened:     make(chan struct{}),
		answered:   make(map[seatKey]answeredAt),
	}
	for i := range n.charges {
		n.charges[i].turn = make(chan struct{}, 1)
	}
	opts := []nats.Option{
		nats.Name("rendezvous"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(-1), // while disconnected, fail at once (503) rather than buffer
		nats.Timeout(natsOpTimeout),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: closed by close
				n.log.Warn("NATS disconnected", "err", err)
			}
			n.event(false)
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrSlowConsumer) {
				// Wake-ups were dropped: every poll looks again.
				n.waiters.all()
			}
			n.log.Warn("NATS", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			n.log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted())
			go n.connected()
		}),
	}
	url := cfg.NATSURL
	if url == "" {
		e, err := startEmbeddedNATS(cfg)
		if err != nil {
			return nil, err
		}
		n.embed = e
		if cfg.NATSDir == "" {
			n.storage = jetstream.MemoryStorage
		}
		opts = append(opts, nats.InProcessServer(e.srv))
	} else {
		// An external cluster that cannot be reached yet: the instance
		// starts, answers 503 and makes the buckets once it connects.
		opts = append(opts, nats.RetryOnFailedConnect(true), nats.ConnectHandler(func(nc *nats.Conn) {
			n.log.Info("NATS connected", "url", nc.ConnectedUrlRedacted())
			go func() {
				if <-n.opened; !n.upAtOpen {
					n.connected()
				}
			}()
		}))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		n.embed.stop()
		return nil, fmt.Errorf("connecting to NATS: %w", err)
	}
	n.nc = nc
	n.js, err = jetstream.New(nc)
	if err == nil {
		n.sub, err = nc.Subscribe(wakePrefix+"*", func(m *nats.Msg) {
			n.waiters.changed(strings.TrimPrefix(m.Subject, wakePrefix))
		})
	}
	n.upAtOpen = nc.IsConnected()
	close(n.opened)
	if err == nil && n.upAtOpen {
		err = n.ensure() // a bad setting (replicas the cluster has not) stops the start
	} else if err == nil {
		n.log.Warn("NATS cannot be reached yet: requests answer 503 until it can", "url", url)
	}
	if err != nil {
		n.close()
		return nil, fmt.Errorf("NATS: %w", err)
	}
	return n, nil
}

// connected makes the buckets and streams (again: a server that lost its
// state, memory storage, gets them back) once the connection is up, and
// wakes every poll (changes may have been missed meanwhile).
func (n *natsStore) connected() {
	<-n.opened
	if n.js == nil || n.sub == nil {
		return // the store did not open
	}
	if err := n.ensure(); err != nil {
		n.log.Warn("NATS: the buckets and streams", "err", err)
	}
	n.waiters.all()
	n.event(true)
}

// event reports a connection event to a test that listens, if any.
func (n *natsStore) event(up bool) {
	select {
	case n.events <- up:
	default:
	}
}

// ensure makes (or updates) the buckets and the streams. A cluster that
// is starting (no JetStream leader elected yet) is given up to 20 s.
func (n *natsStore) ensure() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		// Each try has a time of its own: a request that no server
		// answers yet waits for nothing.
		try, stop := context.WithTimeout(ctx, 2*time.Second)
		err := n.ensureIn(try)
		stop()
		if err == nil || !(notReady(err) || errors.Is(err, context.DeadlineExceeded)) {
			return err
		}
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// notReady reports whether err says that JetStream cannot answer yet:
// no leader, no responders, servers of the cluster not joined yet.
func notReady(err error) bool {
	var apiErr *jetstream.APIError
	// A bucket whose stream was just made may not be found yet where
	// another instance made it at the same moment (a fresh cluster).
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrBucketNotFound) ||
		(errors.As(err, &apiErr) && (apiErr.Code == http.StatusServiceUnavailable ||
			// A cluster whose servers have not all joined yet: the
			// replicas cannot be placed until they have (code 10005 has
			// other reasons, such as too few servers, which do not pass).
			apiErr.ErrorCode == jsNoPeers && strings.HasSuffix(apiErr.Description, "peer offline")))
}

// jsNoPeers is JetStream's error code for replicas it cannot place
// ("no suitable peers for placement", with the reason after a comma).
const jsNoPeers jetstream.ErrorCode = 10005

// ensureIn makes them with the replicas asked for, or, when none were
// asked for, 3 in a cluster (falling back to 1 with a warning when the
// cluster cannot place 3) and 1 on a lone server.
func (n *natsStore) ensureIn(ctx context.Context) error {
	r := n.replicas
	if r == 0 {
		r = 1
		if n.nc.ConnectedClusterName() != "" {
			r = 3
		}
	}
	err := n.ensureWith(ctx, r)
	if err != nil && n.replicas == 0 && r > 1 && strings.Contains(err.Error(), "insufficient resources") {
		n.log.Warn("NATS: the cluster cannot place 3 replicas; the buckets and streams get 1", "err", err)
		err = n.ensureWith(ctx, 1)
	}
	return err
}

func (n *natsStore) ensureWith(ctx context.Context, replicas int) error {
	// Nothing outlives a match's longest life by much: the age limits
	// are only a bound on what a crash leaves behind.
	life := n.openTTL + n.fullTTL + ackGrace + time.Minute
	// The buckets' streams are made here, as nats.go would make them,
	// but for deletes: a key is removed by deleting its message (no
	// marker left), which KV streams refuse by default and which a
	// stream's update cannot allow afterwards. And without direct gets:
	// those may be answered by a replica that has not yet stored the
	// latest write, so a match created through one instance was not
	// found by another in a 3-node cluster (make scale-test: 84 of 2,000
	// joins answered 404); reads go to each stream's leader.
	kv := func(name string, maxKeys int, life time.Duration) (*bucket, error) {
		st, err := n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: "KV_" + name, Subjects: []string{"$KV." + name + ".>"},
			MaxMsgsPerSubject: 1, MaxMsgs: int64(maxKeys), MaxAge: life, MaxMsgSize: matchValueMax,
			Storage: n.storage, Replicas: replicas, AllowRollup: true, Duplicates: 2 * time.Minute,
			MaxConsumers: -1, AllowDirect: false, Discard: jetstream.DiscardNew,
		})
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", name, err)
		}
		b, err := n.js.KeyValue(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", name, err)
		}
		return &bucket{kv: b, stream: st}, nil
	}
	// A value is at most matchValueMax bytes: the buckets' sizes follow
	// from their numbers of keys. An address with queued bytes has sent
	// signals into a full match, of which there are at most maxMatches,
	// each of at most 8 seats.
	matches, err := kv(natsMatches, n.maxMatches, life)
	if err != nil {
		return err
	}
	full, err := kv(natsFull, n.maxMatches, life)
	if err != nil {
		return err
	}
	addrs, err := kv(natsAddrs, lobby.MaxSeats*n.maxMatches, life)
	if err != nil {
		return err
	}
	// An announcement lasts relayTTL; the bucket forgets one two minutes
	// after (no sooner than its Duplicates window; a relay announces
	// again every few seconds).
	relays, err := kv(natsRelays, maxRelays, n.relayTTL+2*time.Minute)
	if err != nil {
		return err
	}
	owners, err := n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:                 natsOwners,
		Subjects:             []string{ownPrefix + "*"},
		MaxMsgsPerSubject:    int64(n.perAddr.matches),
		MaxMsgs:              2 * int64(n.maxMatches), // one a match, and those of creates under way
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
		MaxAge:               life,
		MaxMsgSize:           64,
		Storage:              n.storage,
		Replicas:             replicas,
	})
	if err != nil {
		return fmt.Errorf("stream %s: %w", natsOwners, err)
	}
	signals, err := n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:                 natsSignals,
		Subjects:             []string{sigPrefix + "*.*"},
		MaxMsgsPerSubject:    queueLen,
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
		MaxBytes:             int64(n.maxQueued),
		MaxAge:               life,
		Duplicates:           sendDedup,
		MaxMsgSize:           lobby.MaxSignalData + 1024,
		Storage:              n.storage,
		Replicas:             replicas,
		AllowDirect:          false, // a signal woken for is read from the leader, which has it (as the buckets)
	})
	if err != nil {
		return fmt.Errorf("stream %s: %w", natsSignals, err)
	}
	n.mu.Lock()
	n.matches, n.full, n.addrs, n.signals, n.owners, n.relays = matches, full, addrs, signals, owners, relays
	n.mu.Unlock()
	return nil
}

// handles are the buckets and the stream (replaced when ensure runs again).
func (n *natsStore) handles() (matches, full, addrs *bucket, signals jetstream.Stream) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.matches, n.full, n.addrs, n.signals
}

func (n *natsStore) close() error {
	if n.sub != nil {
		n.sub.Unsubscribe()
	}
	if n.nc != nil {
		n.nc.Close()
	}
	n.embed.stop()
	return nil
}

// healthy is nil when the store is connected to NATS and has its
// buckets and streams.
func (n *natsStore) healthy() error {
	n.mu.Lock()
	ready := n.matches != nil
	n.mu.Unlock()
	if !ready || n.nc == nil || !n.nc.IsConnected() {
		return errStoreDown
	}
	return nil
}

// rtt is the round-trip time to the NATS server (metrics).
func (n *natsStore) rtt() (time.Duration, error) { return n.nc.RTT() }

// op is the context of one exchange with NATS, or errStoreDown at once
// when it is not connected.
func (n *natsStore) op() (context.Context, context.CancelFunc, error) {
	if err := n.healthy(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), natsOpTimeout)
	return ctx, cancel, nil
}

// fail is the answer for an error from NATS: an apiError as it is, any
// other one is logged and answered 503.
func (n *natsStore) fail(what string, err error) error {
	var e *apiError
	if errors.As(err, &e) {
		return err
	}
	n.log.Warn("NATS", "op", what, "err", err)
	return errStoreDown
}

// entry is a match as read, with its revision.
type entry struct {
	m   natsMatch
	rev uint64
}

// get reads the match with code; nil when there is none.
func (n *natsStore) get(ctx context.Context, code string) (*entry, error) {
	matches, _, _, _ := n.handles()
	e, err := matches.kv.Get(ctx, code)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m natsMatch
	if err := json.Unmarshal(e.Value(), &m); err != nil || len(m.Seats) < lobby.MinSeats || len(m.Seats) > lobby.MaxSeats {
		return nil, fmt.Errorf("match %s: bad value %q", code, e.Value())
	}
	return &entry{m: m, rev: e.Revision()}, nil
}

// live reads the match with code, removing it if it has expired; nil
// when there is none (any more).
func (n *natsStore) live(ctx context.Context, code string) (*entry, error) {
	e, err := n.get(ctx, code)
	if e == nil || err != nil {
		return nil, err
	}
	if n.expired(&e.m, n.now()) {
		if err := n.remove(ctx, code, e); err != nil && !errors.Is(err, errChanged) {
			return nil, err
		}
		return nil, nil
	}
	return e, nil
}

func (n *natsStore) expired(m *natsMatch, now time.Time) bool {
	if m.full() {
		return now.Sub(time.Unix(0, m.Filled)) >= n.fullTTL
	}
	return now.Sub(time.Unix(0, m.Created)) >= n.openTTL
}

// errChanged is a compare-and-set that lost: the match changed since it
// was read.
var errChanged = errors.New("the match changed meanwhile")

// update writes e's match if it is still at e's revision (errChanged if
// not), and wakes the match's polls on every instance.
func (n *natsStore) update(ctx context.Context, code string, e *entry) error {
	b, err := json.Marshal(&e.m)
	if err != nil {
		return err
	}
	matches, _, _, _ := n.handles()
	if _, err := matches.kv.Update(ctx, code, b, e.rev); err != nil {
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			return errChanged
		}
		return err
	}
	n.wake(code)
	return nil
}

// wake tells every instance's polls that the match with code changed.
func (n *natsStore) wake(code string) {
	n.nc.Publish(wakePrefix+code, nil)
}

// remove deletes the match read as e (errChanged if it changed since),
// its owner's and full marks, and its seats' signals.
func (n *natsStore) remove(ctx context.Context, code string, e *entry) error {
	matches, full, _, _ := n.handles()
	if err := matches.stream.DeleteMsg(ctx, e.rev); err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return errChanged
		}
		return err
	}
	var errs []error
	errs = append(errs, n.unown(ctx, e.m.Owner, e.m.OwnerSeq))
	if e.m.full() {
		errs = append(errs, deleteKey(ctx, full, code))
	}
	for i := range e.m.Seats {
		errs = append(errs, n.drop(ctx, code, i, ^uint64(0)))
	}
	n.wake(code)
	return errors.Join(errs...)
}

// deleteKey removes key from b without a marker.
func deleteKey(ctx context.Context, b *bucket, key string) error {
	e, err := b.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := b.stream.DeleteMsg(ctx, e.Revision()); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return err
	}
	return nil
}

// addrToken is an address key (addrKey) as a KV key's token.
func addrToken(addr string) string { return base64.RawURLEncoding.EncodeToString([]byte(addr)) }

func (n *natsStore) create(seats int, owner string, relayed bool) (lobby.Ticket, error) {
	if seats < lobby.MinSeats || seats > lobby.MaxSeats {
		return lobby.Ticket{}, errorf(http.StatusBadRequest, lobby.CodeBadRequest, "seats must be from 2 to 8")
	}
	ctx, cancel, err := n.op()
	if err != nil {
		return lobby.Ticket{}, err
	}
	defer cancel()
	t, err := n.createIn(ctx, seats, addrToken(owner), relayed)
	if err != nil {
		return lobby.Ticket{}, n.fail("create", err)
	}
	return t, nil
}

func (n *natsStore) createIn(ctx context.Context, seats int, owner string, relayed bool) (lobby.Ticket, error) {
	matches, _, _, _ := n.handles()
	// The owner's mark first: the stream refuses one beyond the quota.
	ack, err := n.js.Publish(ctx, ownPrefix+owner, nil)
	if err != nil {
		switch s := err.Error(); {
		case strings.Contains(s, "maximum messages per subject"):
			return lobby.Ticket{}, errorf(http.StatusTooManyRequests, lobby.CodeQuota,
				fmt.Sprintf("this address holds %d matches, as many as one address may; leave one (or let it expire) first", n.perAddr.matches))
		case strings.Contains(s, "maximum messages exceeded"):
			return lobby.Ticket{}, errServerFull
		}
		return lobby.Ticket{}, err
	}
	m := natsMatch{Seats: make([]natsSeat, seats), SessionID: randomSessionID(), Secret: make([]byte, secretBytes),
		Owner: owner, OwnerSeq: ack.Sequence, Created: n.now().UnixNano(), Relayed: relayed}
	rand.Read(m.Secret)
	m.Seats[0].Token = randomToken()
	m.Taken = 1
	b, err := json.Marshal(&m)
	if err != nil {
		return lobby.Ticket{}, err
	}
	swept := false
	for range natsRetries {
		code := randomCode()
		_, err := matches.kv.Create(ctx, code, b)
		switch {
		case err == nil:
			return lobby.Ticket{Code: code, Seat: 0, Token: m.Seats[0].Token}, nil
		case errors.Is(err, jetstream.ErrKeyExists):
			continue
		case strings.Contains(err.Error(), "maximum messages exceeded") && !swept:
			// The bucket holds maxMatches: sweep (at most once a
			// capSweepInterval) and try again.
			swept = true
			n.mu.Lock()
			sweep := n.now().Sub(n.lastSweep) >= capSweepInterval
			n.mu.Unlock()
			if sweep {
				n.sweepIn(ctx)
				continue
			}
		}
		n.unown(ctx, owner, m.OwnerSeq)
		if strings.Contains(err.Error(), "maximum messages exceeded") {
			return lobby.Ticket{}, errServerFull
		}
		return lobby.Ticket{}, err
	}
	n.unown(ctx, owner, m.OwnerSeq)
	return lobby.Ticket{}, errors.New("no free match code")
}

// unown deletes an owner's mark.
func (n *natsStore) unown(ctx context.Context, owner string, seq uint64) error {
	n.mu.Lock()
	owners := n.owners
	n.mu.Unlock()
	if err := owners.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return err
	}
	return nil
}

// owned is the number of matches owner's marks count.
func (n *natsStore) owned(ctx context.Context, owner string) (int, error) {
	n.mu.Lock()
	owners := n.owners
	n.mu.Unlock()
	info, err := owners.Info(ctx, jetstream.WithSubjectFilter(ownPrefix+owner))
	if err != nil {
		return 0, err
	}
	return int(info.State.Subjects[ownPrefix+owner]), nil
}

// normalCode is code as stored, or "" when it cannot be one.
func normalCode(code string) string {
	if len(code) > 2*codeLen {
		return ""
	}
	code = lobby.NormalizeCode(code)
	if len(code) != codeLen || strings.Trim(code, codeAlphabet) != "" {
		return ""
	}
	return code
}

func (n *natsStore) join(code string) (lobby.Ticket, error) {
	code = normalCode(code)
	if code == "" {
		return lobby.Ticket{}, errNoMatch
	}
	ctx, cancel, err := n.op()
	if err != nil {
		return lobby.Ticket{}, err
	}
	defer cancel()
	for range natsRetries {
		t, err := n.joinOnce(ctx, code)
		if errors.Is(err, errChanged) {
			continue
		}
		if err != nil {
			return lobby.Ticket{}, n.fail("join", err)
		}
		return t, nil
	}
	return lobby.Ticket{}, errStoreDown
}

func (n *natsStore) joinOnce(ctx context.Context, code string) (lobby.Ticket, error) {
	e, err := n.live(ctx, code)
	if err != nil {
		return lobby.Ticket{}, err
	}
	if e == nil {
		return lobby.Ticket{}, errNoMatch
	}
	now := n.now()
	if until := time.Unix(0, e.m.LockedUntil); e.m.LockedUntil != 0 && now.Before(until) {
		return lobby.Ticket{}, &apiError{status: http.StatusTooManyRequests, code: lobby.CodeLocked,
			msg:        "this match refuses joins for a while: wrong tokens were tried against it",
			retryAfter: until.Sub(now)}
	}
	if e.m.full() {
		return lobby.Ticket{}, errMatchFull
	}
	seat := -1
	for i := range e.m.Seats {
		if e.m.Seats[i].Token == "" {
			seat = i
			break
		}
	}
	if seat < 0 {
		return lobby.Ticket{}, errMatchFull
	}
	e.m.Seats[seat].Token = randomToken()
	e.m.Taken++
	if e.m.full() {
		e.m.Filled = now.UnixNano()
	}
	if err := n.update(ctx, code, e); err != nil {
		return lobby.Ticket{}, err
	}
	if e.m.full() {
		_, full, _, _ := n.handles()
		if _, err := full.kv.Put(ctx, code, nil); err != nil {
			n.log.Warn("NATS: marking a match full", "err", err) // the count of full matches is off until it is removed
		}
	}
	return lobby.Ticket{Code: code, Seat: seat, Token: e.m.Seats[seat].Token}, nil
}

func (n *natsStore) authorize(code, token string) (seatRef, error) {
	code = normalCode(code)
	if code == "" {
		return seatRef{}, errUnauthorized
	}
	ctx, cancel, err := n.op()
	if err != nil {
		return seatRef{}, err
	}
	defer cancel()
	for range natsRetries {
		e, err := n.live(ctx, code)
		if err != nil {
			return seatRef{}, n.fail("authorize", err)
		}
		if e == nil || token == "" {
			return seatRef{}, errUnauthorized
		}
		found := -1
		for i, s := range e.m.Seats {
			// Every held seat's token is compared, in constant time.
			if s.Token != "" && subtle.ConstantTimeCompare([]byte(s.Token), []byte(token)) == 1 {
				found = i
			}
		}
		if found >= 0 {
			return seatRef{code: code, seat: found, token: token}, nil
		}
		if n.lockAfter <= 0 {
			return seatRef{}, errUnauthorized
		}
		// A wrong token counts against the match (registry.failed).
		now := n.now()
		if now.Sub(time.Unix(0, e.m.FailedAt)) >= n.lockFor {
			e.m.Fails = 0
		}
		e.m.Fails++
		e.m.FailedAt = now.UnixNano()
		if e.m.Fails >= n.lockAfter {
			e.m.LockedUntil = now.Add(n.lockFor).UnixNano()
			e.m.Fails = 0
		}
		switch err := n.update(ctx, code, e); {
		case errors.Is(err, errChanged):
			continue
		case err != nil:
			return seatRef{}, n.fail("authorize", err)
		}
		return seatRef{}, errUnauthorized
	}
	return seatRef{}, errStoreDown
}

func (n *natsStore) state(ref seatRef) (lobby.Match, error) {
	ctx, cancel, err := n.op()
	if err != nil {
		return lobby.Match{}, err
	}
	defer cancel()
	e, err := n.live(ctx, ref.code)
	if err != nil {
		return lobby.Match{}, n.fail("state", err)
	}
	if e == nil {
		return lobby.Match{}, errExpired
	}
	return matchState(ref.code, len(e.m.Seats), e.m.Taken, e.m.SessionID, e.m.Secret, e.m.Relayed), nil
}

func (n *natsStore) watch(code string) wake { return n.waiters.watch(code) }

func (n *natsStore) send(ref seatRef, sig lobby.Signal, sender string) error {
	ctx, cancel, err := n.op()
	if err != nil {
		return err
	}
	defer cancel()
	if err := n.sendIn(ctx, ref, sig, addrToken(sender)); err != nil {
		return n.fail("send", err)
	}
	return nil
}

func (n *natsStore) sendIn(ctx context.Context, ref seatRef, sig lobby.Signal, by string) error {
	e, err := n.live(ctx, ref.code)
	if err != nil {
		return err
	}
	if e == nil {
		return errExpired
	}
	if err := checkRelayed(sig, len(e.m.Seats), e.m.Relayed); err != nil {
		return err
	}
	if err := checkSignal(sig, len(e.m.Seats)); err != nil {
		return err
	}
	if !e.m.full() {
		return errorf(http.StatusConflict, lobby.CodeNotFull, "the match is not full yet")
	}
	if e.m.Seats[sig.To].Left {
		return errorf(http.StatusGone, lobby.CodeGone, "the recipient has left the match")
	}
	size := len(sig.Data)
	if size > 0 {
		charged, err := n.charge(ctx, by, size, n.perAddr.bytes)
		if err != nil {
			return err
		}
		if !charged {
			held, _ := n.queuedBy(ctx, by)
			return &apiError{status: http.StatusTooManyRequests, code: lobby.CodeQuota,
				msg:        fmt.Sprintf("this address has %d bytes of signals waiting for their recipients, as many as one address may", held),
				retryAfter: time.Second}
		}
	}
	body, _ := json.Marshal(signalBody{From: sig.From, Kind: sig.Kind, Data: sig.Data})
	msg := &nats.Msg{Subject: seatSubject(ref.code, sig.To), Data: body, Header: nats.Header{headerBy: []string{by}}}
	var opts []jetstream.PublishOpt
	if sig.ID != 0 {
		// The stream takes a message ID once within its Duplicates
		// window: a signal sent again after its answer was lost is not
		// queued twice. A seat's holder is fixed once the match is full
		// (and signals need a full match): code and seat name it.
		// The ID has a fixed width: a signal's bytes in the stream (its
		// charge against MaxQueuedBytes) do not depend on its number.
		opts = append(opts, jetstream.WithMsgID(fmt.Sprintf("%s.%d.%016x", ref.code, sig.From, sig.ID)))
	}
	ack, err := n.js.PublishMsg(ctx, msg, opts...)
	if err == nil && ack.Duplicate {
		if size > 0 {
			n.charge(ctx, by, -size, 0)
		}
		return nil
	}
	if err != nil {
		if size > 0 {
			n.charge(ctx, by, -size, 0)
		}
		switch s := err.Error(); {
		case strings.Contains(s, "maximum messages per subject"):
			return &apiError{status: http.StatusTooManyRequests, code: lobby.CodeQueueFull,
				msg: "the recipient's signal queue is full", retryAfter: time.Second}
		case strings.Contains(s, "maximum bytes"), strings.Contains(s, "insufficient resources"):
			return errorf(http.StatusServiceUnavailable, lobby.CodeUnavailable,
				"the server's signal queues are full; try again later")
		}
		return err
	}
	n.wake(ref.code)
	return nil
}

func seatSubject(code string, seat int) string { return sigPrefix + code + "." + strconv.Itoa(seat) }

// charge adds delta bytes to the queued bytes of address by, unless that
// would take them beyond limit (delta > 0); it reports whether it did.
func (n *natsStore) charge(ctx context.Context, by string, delta, limit int) (bool, error) {
	h := fnv.New32a()
	h.Write([]byte(by))
	st := &n.charges[h.Sum32()%uint32(len(n.charges))]
	select { // our turn, or the request's deadline: a wait past it helps nobody
	case st.turn <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-st.turn }()
	_, _, addrs, _ := n.handles()
	key := "q." + by
	for try := range natsRetries {
		cur, rev := 0, uint64(0)
		if try == 0 && st.key == key {
			// The value and revision of our own last change of it: the
			// compare-and-set below fails if another instance changed it
			// since, and the next try reads it. Players behind one address
			// send their signals one change at a time, and a read before
			// each doubled the round trips each waited for (TestLoad on
			// NATS under load: 20 s and its deadline).
			cur, rev = st.val, st.rev
		} else {
			e, err := addrs.kv.Get(ctx, key)
			switch {
			case errors.Is(err, jetstream.ErrKeyNotFound):
			case err != nil:
				st.key = ""
				return false, err
			default:
				cur, _ = strconv.Atoi(string(e.Value()))
				rev = e.Revision()
			}
		}
		next := cur + delta
		if cached := try == 0 && st.key == key; cached && (delta > 0 && next > limit || next <= 0) {
			// Read it before refusing, or before deleting the key by its
			// revision: our figure may be stale.
			st.key = ""
			continue
		}
		if delta > 0 && next > limit {
			return false, nil
		}
		st.key = ""
		if next <= 0 {
			if rev == 0 {
				return true, nil
			}
			err := addrs.stream.DeleteMsg(ctx, rev)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			return err == nil, err
		}
		var err error
		var now uint64
		if rev == 0 {
			now, err = addrs.kv.Create(ctx, key, []byte(strconv.Itoa(next)))
		} else {
			now, err = addrs.kv.Update(ctx, key, []byte(strconv.Itoa(next)), rev)
		}
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		if err == nil {
			st.key, st.val, st.rev = key, next, now
		}
		return err == nil, err
	}
	return false, errors.New("queued bytes: too many conflicting changes")
}

// chargeStripe serializes this instance's changes of one stripe of
// addresses' queued bytes (natsStore.charge) and remembers the last one it
// made.
type chargeStripe struct {
	turn chan struct{} // holds a token while a change is made
	key  string        // the key of the last change made ("": none known)
	val  int           // its value then
	rev  uint64        // and its revision
}

// queuedBy is the bytes of address by's signals still queued.
func (n *natsStore) queuedBy(ctx context.Context, by string) (int, error) {
	_, _, addrs, _ := n.handles()
	e, err := addrs.kv.Get(ctx, "q."+by)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(e.Value()))
}

// queuedMsg is one signal waiting in the stream, and who sent it.
type queuedMsg struct {
	sig lobby.Signal
	by  string
}

// read returns the signals queued for seat i of the match with code, in
// Seq order.
func (n *natsStore) read(ctx context.Context, code string, i int) ([]queuedMsg, error) {
	_, _, _, signals := n.handles()
	subject := seatSubject(code, i)
	var out []queuedMsg
	for from := uint64(1); len(out) <= queueLen; {
		m, err := signals.GetMsg(ctx, from, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		var b signalBody
		if err := json.Unmarshal(m.Data, &b); err != nil {
			return nil, fmt.Errorf("signal %d: %w", m.Sequence, err)
		}
		out = append(out, queuedMsg{
			sig: lobby.Signal{From: b.From, To: i, Kind: b.Kind, Data: b.Data, Seq: m.Sequence},
			by:  m.Header.Get(headerBy),
		})
		from = m.Sequence + 1
	}
	return out, nil
}

// forget deletes the signals qs from the stream and uncharges their
// senders.
func (n *natsStore) forget(ctx context.Context, qs []queuedMsg) error {
	_, _, _, signals := n.handles()
	bytes := map[string]int{}
	var errs []error
	for _, q := range qs {
		if err := signals.DeleteMsg(ctx, q.sig.Seq); err != nil {
			if !errors.Is(err, jetstream.ErrMsgNotFound) {
				errs = append(errs, err)
			}
			continue // another instance forgot it (and uncharged it)
		}
		if q.by != "" {
			bytes[q.by] += len(q.sig.Data)
		}
	}
	for by, b := range bytes {
		if b > 0 {
			if _, err := n.charge(ctx, by, -b, 0); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// drop forgets the signals of seat i of the match with code up to Seq
// upTo.
func (n *natsStore) drop(ctx context.Context, code string, i int, upTo uint64) error {
	qs, err := n.read(ctx, code, i)
	if err != nil {
		return err
	}
	k := 0
	for k < len(qs) && qs[k].sig.Seq <= upTo {
		k++
	}
	return n.forget(ctx, qs[:k])
}

func (n *natsStore) take(ref seatRef, ack bool, after uint64, deliver bool) ([]lobby.Signal, error) {
	ctx, cancel, err := n.op()
	if err != nil {
		return nil, err
	}
	defer cancel()
	batch, err := n.takeIn(ctx, ref, ack, after, deliver)
	if err != nil {
		return nil, n.fail("take", err)
	}
	return batch, nil
}

func (n *natsStore) takeIn(ctx context.Context, ref seatRef, ack bool, after uint64, deliver bool) ([]lobby.Signal, error) {
	e, err := n.live(ctx, ref.code)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, errExpired
	}
	if e.m.Seats[ref.seat].Token != ref.token { // the holder left meanwhile (with another request)
		return nil, errUnauthorized
	}
	qs, err := n.read(ctx, ref.code, ref.seat)
	if err != nil {
		return nil, err
	}
	key := seatKey{ref.code, ref.seat}
	if ack {
		k := 0
		for k < len(qs) && qs[k].sig.Seq <= after {
			k++
		}
		if err := n.forget(ctx, qs[:k]); err != nil {
			return nil, err
		}
		qs = qs[k:]
		n.mu.Lock()
		if a, ok := n.answered[key]; ok && a.seq <= after {
			delete(n.answered, key)
		}
		n.mu.Unlock()
	}
	if len(qs) == 0 || !deliver {
		return nil, nil
	}
	batch := make([]lobby.Signal, len(qs))
	for k := range qs {
		batch[k] = qs[k].sig
	}
	if ack {
		n.mu.Lock()
		n.answered[key] = answeredAt{seq: batch[len(batch)-1].Seq, at: n.now()}
		n.mu.Unlock()
	} else if err := n.forget(ctx, qs); err != nil {
		return nil, err
	}
	return batch, nil
}

func (n *natsStore) leave(ref seatRef) error {
	ctx, cancel, err := n.op()
	if err != nil {
		return err
	}
	defer cancel()
	for range natsRetries {
		err := n.leaveOnce(ctx, ref)
		if errors.Is(err, errChanged) {
			continue
		}
		if err != nil {
			return n.fail("leave", err)
		}
		return nil
	}
	return errStoreDown
}

func (n *natsStore) leaveOnce(ctx context.Context, ref seatRef) error {
	e, err := n.live(ctx, ref.code)
	if err != nil {
		return err
	}
	if e == nil {
		return errExpired
	}
	s := &e.m.Seats[ref.seat]
	if s.Token != ref.token {
		return errUnauthorized
	}
	s.Token = ""
	empty := false
	if e.m.full() {
		s.Left = true
		empty = true
		for _, o := range e.m.Seats {
			empty = empty && o.Left
		}
	} else {
		e.m.Taken--
		empty = e.m.Taken == 0
	}
	if empty {
		return n.remove(ctx, ref.code, e)
	}
	if err := n.update(ctx, ref.code, e); err != nil {
		return err
	}
	return n.drop(ctx, ref.code, ref.seat, ^uint64(0))
}

func (n *natsStore) seatHeld(code string, i int) (exists, held bool) {
	code = normalCode(code)
	ctx, cancel, err := n.op()
	if code == "" || err != nil {
		return false, false // while NATS is down, no new TURN allocation
	}
	defer cancel()
	e, err := n.live(ctx, code)
	if e == nil || err != nil {
		return false, false
	}
	return true, i >= 0 && i < len(e.m.Seats) && e.m.Seats[i].Token != ""
}

// counts reads the buckets' and the stream's sizes: three requests,
// whatever the number of matches. The queued bytes are what the stream
// stores: the signals' data and, for each, its subject, header and JSON
// (about 100 bytes).
func (n *natsStore) counts() (matches, full, queued int) {
	ctx, cancel, err := n.op()
	if err != nil {
		return 0, 0, 0
	}
	defer cancel()
	mb, fb, _, signals := n.handles()
	if st, err := mb.kv.Status(ctx); err == nil {
		matches = int(st.Values())
	}
	if st, err := fb.kv.Status(ctx); err == nil {
		full = int(st.Values())
	}
	if info, err := signals.Info(ctx); err == nil {
		queued = int(info.State.Bytes)
	}
	return matches, full, queued
}

func (n *natsStore) sweep() int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*natsOpTimeout)
	defer cancel()
	if n.healthy() != nil {
		return 0
	}
	return n.sweepIn(ctx)
}

// sweepIn forgets the signals this instance answered ackGrace ago or
// longer that no poll acknowledged, then walks every match (walk).
func (n *natsStore) sweepIn(ctx context.Context) int {
	now := n.now()
	n.forgetAnswered(ctx, now)
	return n.walk(ctx, now)
}

// sweepLeased is main's periodic sweep: every instance forgets what it
// answered, but only one walks every match each period (the one that
// takes the lease, key "sweep" of rdv_addrs: the time of the last walk,
// changed by compare-and-set), so that N instances do not walk the
// matches N times.
func (n *natsStore) sweepLeased(period time.Duration) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*natsOpTimeout)
	defer cancel()
	if n.healthy() != nil {
		return 0
	}
	now := n.now()
	n.forgetAnswered(ctx, now)
	if !n.lease(ctx, now, period-period/10) {
		return 0
	}
	return n.walk(ctx, now)
}

// lease takes the sweep's lease unless an instance took it less than d
// ago; it reports whether this one did.
func (n *natsStore) lease(ctx context.Context, now time.Time, d time.Duration) bool {
	_, _, addrs, _ := n.handles()
	stamp := []byte(strconv.FormatInt(now.UnixNano(), 10))
	e, err := addrs.kv.Get(ctx, "sweep")
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		_, err = addrs.kv.Create(ctx, "sweep", stamp)
	case err != nil:
		return false
	default:
		last, _ := strconv.ParseInt(string(e.Value()), 10, 64)
		if now.Sub(time.Unix(0, last)) < d {
			return false
		}
		_, err = addrs.kv.Update(ctx, "sweep", stamp, e.Revision())
	}
	return err == nil
}

// forgetAnswered forgets the signals this instance answered ackGrace ago
// or longer that no poll acknowledged.
func (n *natsStore) forgetAnswered(ctx context.Context, now time.Time) {
	n.mu.Lock()
	var stale []seatKey
	var upTo []uint64
	for k, a := range n.answered {
		if now.Sub(a.at) >= ackGrace {
			stale = append(stale, k)
			upTo = append(upTo, a.seq)
			delete(n.answered, k)
		}
	}
	n.mu.Unlock()
	for i, k := range stale {
		if err := n.drop(ctx, k.code, k.seat, upTo[i]); err != nil {
			n.log.Warn("NATS sweep: forgetting answered signals", "err", err)
		}
	}
}

// walk goes over every match (a watch of the bucket: one pass over its
// values) and removes the expired ones; it returns how many.
func (n *natsStore) walk(ctx context.Context, now time.Time) int {
	n.mu.Lock()
	n.lastSweep = now
	n.swept++
	n.mu.Unlock()
	removed := 0
	matches, _, _, _ := n.handles()
	w, err := matches.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		n.log.Warn("NATS sweep", "err", err)
		return 0
	}
	type found struct {
		code string
		e    entry
	}
	var expired []found
	for {
		var u jetstream.KeyValueEntry
		select {
		case u = <-w.Updates():
		case <-ctx.Done():
		}
		if u == nil {
			break // every current value has come (or the time is up)
		}
		var m natsMatch
		if err := json.Unmarshal(u.Value(), &m); err != nil || len(m.Seats) == 0 {
			n.log.Warn("NATS sweep: a match that does not decode", "key", u.Key(), "err", err)
			continue
		}
		if n.expired(&m, now) {
			expired = append(expired, found{u.Key(), entry{m: m, rev: u.Revision()}})
		}
	}
	w.Stop()
	for _, f := range expired {
		if err := n.remove(ctx, f.code, &f.e); err == nil {
			removed++
		}
	}
	return removed
}

// used is what addr holds now (tests).
func (n *natsStore) used(addr string) usage {
	ctx, cancel, err := n.op()
	if err != nil {
		return usage{}
	}
	defer cancel()
	by := addrToken(addr)
	held, _ := n.owned(ctx, by)
	bytes, _ := n.queuedBy(ctx, by)
	return usage{matches: held, bytes: bytes}
}

// charged is the number of addresses that hold something (tests).
func (n *natsStore) charged() int {
	ctx, cancel, err := n.op()
	if err != nil {
		return 0
	}
	defer cancel()
	_, _, addrs, _ := n.handles()
	n.mu.Lock()
	owners := n.owners
	n.mu.Unlock()
	seen := map[string]bool{}
	for _, f := range []struct {
		st     jetstream.Stream
		prefix string
	}{{addrs.stream, "$KV." + natsAddrs + ".q."}, {owners, ownPrefix}} {
		info, err := f.st.Info(ctx, jetstream.WithSubjectFilter(f.prefix+"*"))
		if err != nil {
			return -1
		}
		for subj := range info.State.Subjects {
			seen[strings.TrimPrefix(subj, f.prefix)] = true
		}
	}
	return len(seen)
}

// walks is the number of sweeps of every match so far (tests).
func (n *natsStore) walks() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.swept
}

// placement is the relay the match is placed on (store.placement).
func (n *natsStore) placement(code string) (placement, error) {
	ctx, cancel, err := n.op()
	if err != nil {
		return placement{}, err
	}
	defer cancel()
	e, err := n.live(ctx, code)
	if err != nil {
		return placement{}, n.fail("placement", err)
	}
	if e == nil {
		return placement{}, errExpired
	}
	return e.m.Placed, nil
}

// place records p unless the match has a placement, by compare-and-set
// (store.place): of several instances placing it, the first wins.
func (n *natsStore) place(code string, p placement) (placement, error) {
	ctx, cancel, err := n.op()
	if err != nil {
		return placement{}, err
	}
	defer cancel()
	for range natsRetries {
		e, err := n.live(ctx, code)
		if err != nil {
			return placement{}, n.fail("place", err)
		}
		if e == nil {
			return placement{}, errExpired
		}
		if e.m.Placed.Match != "" {
			return e.m.Placed, nil
		}
		e.m.Placed = p
		switch err := n.update(ctx, code, e); {
		case err == nil:
			return p, nil
		case !errors.Is(err, errChanged):
			return placement{}, n.fail("place", err)
		}
	}
	return placement{}, n.fail("place", errors.New("too many concurrent changes"))
}

// fromRelay queues a signal of the match's relay for a seat
// (store.fromRelay), charged to relaySender.
func (n *natsStore) fromRelay(code string, sig lobby.Signal) error {
	ctx, cancel, err := n.op()
	if err != nil {
		return err
	}
	defer cancel()
	e, err := n.live(ctx, code)
	if err != nil {
		return n.fail("relay signal", err)
	}
	if e == nil {
		return errExpired
	}
	if err := checkFromRelay(sig, len(e.m.Seats), e.m.Relayed); err != nil {
		return err
	}
	by := addrToken(relaySender)
	size := len(sig.Data)
	if _, err := n.charge(ctx, by, size, n.maxQueued); err != nil {
		return n.fail("relay signal", err)
	}
	body, _ := json.Marshal(signalBody{From: sig.From, Kind: sig.Kind, Data: sig.Data})
	msg := &nats.Msg{Subject: seatSubject(code, sig.To), Data: body, Header: nats.Header{headerBy: []string{by}}}
	if _, err := n.js.PublishMsg(ctx, msg); err != nil {
		n.charge(ctx, by, -size, 0)
		return n.fail("relay signal", err)
	}
	n.wake(code)
	return nil
}

// announce records a relay's announcement (store.announce).
func (n *natsStore) announce(a relayInfo) error {
	ctx, cancel, err := n.op()
	if err != nil {
		return err
	}
	defer cancel()
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	n.mu.Lock()
	relays := n.relays
	n.mu.Unlock()
	if _, err := relays.kv.Put(ctx, a.ID, b); err != nil {
		if strings.Contains(err.Error(), "maximum messages exceeded") {
			return errorf(http.StatusServiceUnavailable, lobby.CodeUnavailable, "the server knows as many relays as it may")
		}
		return n.fail("announce", err)
	}
	return nil
}

// liveRelays returns the announcements not expired (store.liveRelays).
func (n *natsStore) liveRelays() ([]relayInfo, error) {
	ctx, cancel, err := n.op()
	if err != nil {
		return nil, err
	}
	defer cancel()
	n.mu.Lock()
	relays := n.relays
	n.mu.Unlock()
	keys, err := relays.kv.ListKeys(ctx)
	if err != nil {
		return nil, n.fail("relays", err)
	}
	defer keys.Stop()
	now := n.now()
	var out []relayInfo
	for k := range keys.Keys() {
		e, err := relays.kv.Get(ctx, k)
		if err != nil {
			continue // removed meanwhile
		}
		var a relayInfo
		if json.Unmarshal(e.Value(), &a) == nil && !now.After(a.Expires) {
			out = append(out, a)
		}
	}
	return out, nil
}
