/*
 * The slot scheduler's spec keys through detpath_open (127.0.0.1, runs
 * anywhere): a datagram sent through a `sched=slots` endpoint is held until
 * its class's slot and leaves in it while the endpoint is received on; bad
 * scheduler keys are errors naming the key. Run by tests/c_abi.rs; prints
 * "ok: N checks" and exits 0, or names the failed check and exits 1.
 */
#include "check.h"

#include <stdint.h>
#include <time.h>

/* 20 ms slots, a ring of 5 (100 ms): `bulk` owns position 3 only, 60..80 ms into each ring cycle. */
#define SLOT_NS 20000000ULL
#define RING_NS (5 * SLOT_NS)
#define BULK_START_NS (3 * SLOT_NS)

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL) };
	nanosleep(&ts, NULL);
}

int main(void)
{
	unsigned char buf[256];
	struct detpath_rx_meta meta;
	struct detpath_counters c;
	struct detpath_addr rx_addr;

	/* Bad scheduler keys: NULL, and the message names the key. */
	CHECK(detpath_open("udp://127.0.0.1:0?sched=slots&classes=bulk:be:0&sched_mod=strict") == NULL, "unknown sched_ key");
	CHECK_MSG("`sched_mod` is not a key of the slot scheduler");
	CHECK(detpath_open("udp://127.0.0.1:0?slot_ns=1000") == NULL, "scheduler key without sched=slots");
	CHECK_MSG("`slot_ns` is a key of the slot scheduler: add `sched=slots`");
	CHECK(detpath_open("udp://127.0.0.1:0?sched=slots&slot_ns=ten&classes=bulk:be:0") == NULL, "slot_ns not a number");
	CHECK_MSG("slot_ns=ten");
	CHECK(detpath_open("udp://127.0.0.1:0?sched=slots&classes=bulk:be:0&send_class=nope") == NULL, "send_class names no class");
	CHECK_MSG("`send_class=nope`");

	struct detpath_endpoint *rx = detpath_open("udp://127.0.0.1:0");
	CHECK(rx != NULL, "plain receiver");
	CHECK(detpath_local_addr(rx, &rx_addr) == 0, "receiver address");

	/* Only a real-time class: send_to has no class to go to, and says so. */
	struct detpath_endpoint *rt_only = detpath_open("udp://127.0.0.1:0?sched=slots&classes=ctl:rt:0");
	CHECK(rt_only != NULL, "opening a real-time-only scheduler");
	CHECK(detpath_send_to(rt_only, "x", 1, rx_addr.ip, rx_addr.port) < 0, "send_to without a best-effort class");
	CHECK_MSG("best-effort class");
	detpath_close(rt_only);

	struct detpath_endpoint *tx =
		detpath_open("udp://127.0.0.1:0?sched=slots&slot_ns=20000000&ring_slots=5&lead_slots=1&classes=bulk:be:3");
	CHECK(tx != NULL, "opening with sched=slots");
	for (int round = 0; round < 3; round++) {
		/* Send 5 ms into a ring cycle: bulk's slot is 55 ms away. */
		uint64_t now = mono_ns();
		sleep_ns(RING_NS - now % RING_NS + 5000000ULL);
		char msg[16];
		int len = snprintf(msg, sizeof msg, "slot %d", round);
		CHECK(detpath_send_to(tx, msg, (size_t)len, rx_addr.ip, rx_addr.port) == 0, "send through the scheduler");
		sleep_ns(10000000ULL);
		CHECK(detpath_recv(rx, buf, sizeof buf, 0, &meta) == 0, "round %d: held until its slot, not sent at once", round);
		/* The sender's receive serves the slots while it waits (nothing comes to it). */
		CHECK(detpath_recv(tx, buf, sizeof buf, 150000, NULL) == 0, "the sender receives nothing");
		long n = detpath_recv(rx, buf, sizeof buf, 1000000, &meta);
		CHECK(n == len && memcmp(buf, msg, (size_t)len) == 0, "round %d: the datagram arrives (n=%ld)", round, n);
		uint64_t at = meta.rx_ns % RING_NS;
		/* Released at the slot's start; 15 ms of slack past the slot for a loaded machine. */
		CHECK(at >= BULK_START_NS && at < BULK_START_NS + SLOT_NS + 15000000ULL, "round %d: arrived %.1f ms into the ring cycle, not in bulk's slot (60..80 ms)",
		      round, (double)at / 1e6);
	}
	CHECK(detpath_counters(tx, &c) == 0 && c.tx_packets == 3, "the inner endpoint sent 3, counted %llu", (unsigned long long)c.tx_packets);
	detpath_close(tx);
	detpath_close(rx);
	CHECKS_DONE();
	return 0;
}
