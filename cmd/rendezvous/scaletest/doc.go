// Package scaletest is make scale-test: the rendezvous scaled out as an
// operator runs it, started by its tests inside a network namespace of
// their own (cmd/rendezvous/scale-test.sh): a three-node NATS cluster,
// three rendezvous instances on distinct loopback addresses behind a
// load balancer, and coturn. Two machines play through different
// instances; an instance dies while they signal, and a NATS node while a
// match waits; the media goes through coturn with credentials the
// rendezvous minted; and a bounded load of matches measures the
// latencies and the memory that docs/deployment.md gives.
// TestDeploymentDoc follows docs/deployment.md itself: it runs the blocks
// marked "<!-- deployment-test: NAME -->" as written (the binary with no
// flags; three NATS nodes, three instances and a balancer) and plays a
// match through what each started. The package
// has only tests; they skip unless REWIND_SCALE_BIN names the directory
// with the rendezvous and nats-server binaries.
package scaletest
