/*
 * Bad input at the C boundary: every case is an error with a message (or a
 * documented outcome), never a crash. Two kernel UDP endpoints on
 * 127.0.0.1, so it runs anywhere. Run by tests/c_abi.rs; prints
 * "ok: N checks" and exits 0, or names the failed check and exits 1.
 */
#include "check.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

static struct detpath_endpoint *must_open(const char *spec)
{
	struct detpath_endpoint *ep = detpath_open(spec);
	CHECK(ep != NULL, "opening %s", spec);
	return ep;
}

struct waiter {
	struct detpath_endpoint *ep;
	long result;
	volatile int inside;
};

static void *wait_forever(void *arg)
{
	struct waiter *w = arg;
	unsigned char buf[64];
	w->inside = 1;
	w->result = detpath_recv(w->ep, buf, sizeof buf, -1, NULL);
	return NULL;
}

static void *fail_in_thread(void *arg)
{
	(void)arg;
	CHECK(detpath_open("nosuch://x") == NULL, "bad spec in a thread");
	CHECK_MSG("nosuch");
	return NULL;
}

int main(void)
{
	unsigned char buf[256];
	struct detpath_rx_meta meta;
	struct detpath_counters c;
	struct detpath_addr a_addr, b_addr;

	/* Invalid specs: NULL, an error naming what is wrong. */
	CHECK(detpath_open(NULL) == NULL, "NULL spec");
	CHECK_MSG("spec is NULL");
	CHECK(detpath_open("bogus://x") == NULL, "unknown datapath");
	CHECK_MSG("unknown datapath `bogus`");
	CHECK(detpath_open("udp://127.0.0.1:7000?port=abc") == NULL, "port not a number");
	CHECK_MSG("invalid endpoint spec");
	CHECK(detpath_open("afxdp://nosuchif0?port=7000") == NULL, "missing interface");
	CHECK_MSG("nosuchif0");
	CHECK(detpath_open("") == NULL, "empty spec");
	CHECK(strlen(detpath_last_error()) > 0, "empty spec has a message");

	/* NULL and foreign handles. */
	CHECK(detpath_send_to(NULL, "x", 1, "127.0.0.1", 9) == -EBADF, "send on NULL");
	CHECK_MSG("NULL");
	CHECK(detpath_recv(NULL, buf, sizeof buf, 0, &meta) == -EBADF, "recv on NULL");
	CHECK(detpath_counters(NULL, &c) == -EBADF, "counters on NULL");
	CHECK(detpath_capabilities(NULL) == NULL, "capabilities on NULL");
	CHECK(detpath_set_blocking(NULL, 1) == -EBADF, "set_blocking on NULL");
	detpath_close(NULL); /* allowed, like free(NULL) */
	CHECK(detpath_recv((struct detpath_endpoint *)(uintptr_t)0x7fffdeadbeef, buf, sizeof buf, 0, NULL) == -EBADF,
	      "recv on a made-up handle");
	CHECK(detpath_counters((struct detpath_endpoint *)&c, &c) == -EBADF, "counters on a stack pointer");

	struct detpath_endpoint *a = must_open("udp://127.0.0.1:0");
	struct detpath_endpoint *b = must_open("udp://127.0.0.1:0");
	CHECK(detpath_local_addr(a, &a_addr) == 0 && a_addr.port != 0, "a has a port");
	CHECK(detpath_local_addr(b, &b_addr) == 0, "b has an address");
	CHECK(strcmp(a_addr.ip, "127.0.0.1") == 0, "a's ip text is %s", a_addr.ip);
	CHECK(strncmp(detpath_capabilities(a), "udp", 3) == 0, "capabilities: %s", detpath_capabilities(a));

	/* NULL pointers and empty buffers as arguments. */
	CHECK(detpath_recv(a, NULL, 10, 0, &meta) == -EINVAL, "recv into NULL");
	CHECK_MSG("buf is NULL");
	CHECK(detpath_recv(a, buf, 0, 0, &meta) == -EINVAL, "recv into 0 bytes");
	CHECK_MSG("cap is 0");
	CHECK(detpath_recv(a, buf, sizeof buf, -5, &meta) == -EINVAL, "negative timeout");
	CHECK_MSG("timeout_us");
	CHECK(detpath_send_to(b, NULL, 10, a_addr.ip, a_addr.port) == -EINVAL, "send from NULL");
	CHECK_MSG("buf is NULL");
	CHECK(detpath_send_to(b, "x", 1, NULL, a_addr.port) == -EINVAL, "send to NULL ip");
	CHECK_MSG("ip is NULL");
	CHECK(detpath_send_to(b, "x", 1, "999.1.1.1", a_addr.port) == -EINVAL, "send to a bad ip");
	CHECK_MSG("999.1.1.1");
	CHECK(detpath_send_to_addr(b, "x", 1, NULL) == -EINVAL, "send to a NULL peer");
	CHECK(detpath_counters(a, NULL) == -EINVAL, "counters into NULL");
	CHECK(detpath_local_addr(a, NULL) == -EINVAL, "local_addr into NULL");
	CHECK(detpath_send_batch(b, NULL, 2) == -EINVAL, "batch from NULL");
	CHECK(detpath_send_batch(b, NULL, 0) == 0, "empty batch");
	CHECK(detpath_recv_batch(a, NULL, 2, 0) == -EINVAL, "batch into NULL");
	static unsigned char huge[70000];
	CHECK(detpath_send_to(b, huge, sizeof huge, a_addr.ip, a_addr.port) < 0, "a datagram larger than UDP allows");
	CHECK(strlen(detpath_last_error()) > 0, "oversize send has a message");

	/* Nothing there: 0, rx_ns 0. meta may be NULL. */
	CHECK(detpath_recv(a, buf, sizeof buf, 0, &meta) == 0 && meta.rx_ns == 0, "non-blocking, nothing there");
	CHECK(detpath_recv(a, buf, sizeof buf, 2000, NULL) == 0, "2 ms busy-poll, nothing there");
	CHECK(detpath_set_blocking(a, 1) == 0, "blocking mode");
	CHECK(detpath_recv(a, buf, sizeof buf, 2000, &meta) == 0 && meta.rx_ns == 0, "2 ms blocking, nothing there");

	/* A buffer smaller than the datagram: cut, flagged, counted. */
	memset(buf, 'z', 100);
	CHECK(detpath_send_to(b, buf, 100, a_addr.ip, a_addr.port) == 0, "send 100 bytes");
	memset(buf, 0, sizeof buf);
	long n = detpath_recv(a, buf, 10, 1000000, &meta);
	CHECK(n == 10 && meta.len == 10 && meta.truncated == 1, "truncated to 10: n=%ld len=%zu truncated=%d", n,
	      meta.len, meta.truncated);
	CHECK(meta.peer.port == b_addr.port && strcmp(meta.peer.ip, "127.0.0.1") == 0, "peer is b");
	CHECK(meta.rx_ns != 0, "rx_ns set");
	CHECK(detpath_counters(a, &c) == 0 && c.rx_truncated == 1 && c.rx_packets == 1, "rx_truncated %llu",
	      (unsigned long long)c.rx_truncated);

	/* A zero-length datagram: 0 bytes, but rx_ns says it arrived. */
	CHECK(detpath_send_to(b, NULL, 0, a_addr.ip, a_addr.port) == 0, "send an empty datagram");
	n = detpath_recv(a, buf, sizeof buf, 1000000, &meta);
	CHECK(n == 0 && meta.rx_ns != 0 && meta.truncated == 0, "empty datagram received: n=%ld", n);
	CHECK(detpath_set_blocking(a, 0) == 0, "busy-poll mode");

	/* Batches: three out, three in (a fourth slot stays empty). */
	struct detpath_tx_datagram out[3];
	const char *words[3] = { "one", "two", "three" };
	for (int i = 0; i < 3; i++) {
		out[i].buf = words[i];
		out[i].len = strlen(words[i]);
		out[i].peer = a_addr;
	}
	CHECK(detpath_send_batch(b, out, 3) == 3, "send a batch of 3");
	unsigned char slot_bufs[4][64];
	struct detpath_rx_slot slots[4];
	for (int i = 0; i < 4; i++) {
		slots[i].buf = slot_bufs[i];
		slots[i].cap = sizeof slot_bufs[i];
	}
	long got = 0;
	for (int tries = 0; tries < 100 && got < 3; tries++) {
		long k = detpath_recv_batch(a, slots + got, (size_t)(4 - got), 100000);
		CHECK(k >= 0, "recv_batch: %ld", k);
		got += k;
	}
	CHECK(got == 3, "received %ld of 3", got);
	for (int i = 0; i < 3; i++)
		CHECK(slots[i].meta.len == strlen(words[i]) && memcmp(slot_bufs[i], words[i], slots[i].meta.len) == 0,
		      "datagram %d in order", i);
	slots[0].cap = 0;
	CHECK(detpath_recv_batch(a, slots, 2, 0) == -EINVAL, "a batch slot of 0 bytes");

	/* One thread at a time: a second caller gets -EBUSY, not a race. */
	struct waiter w = { .ep = a, .result = -999, .inside = 0 };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, wait_forever, &w) == 0, "thread");
	while (!w.inside)
		;
	struct timespec pause = { 0, 50 * 1000 * 1000 };
	nanosleep(&pause, NULL); /* let it get into the receive */
	CHECK(detpath_counters(a, &c) == -EBUSY, "a second caller on a busy handle");
	CHECK_MSG("another thread");
	CHECK(detpath_send_to(b, "wake", 4, a_addr.ip, a_addr.port) == 0, "wake the waiter");
	pthread_join(t, NULL);
	CHECK(w.result == 4, "the waiter received 4 bytes, got %ld", w.result);
	CHECK(detpath_counters(a, &c) == 0, "free again after the call");

	/* The last error is per thread. */
	CHECK(detpath_open("bogus2://x") == NULL, "bad spec");
	CHECK(pthread_create(&t, NULL, fail_in_thread, NULL) == 0, "thread");
	pthread_join(t, NULL);
	CHECK_MSG("bogus2");

	/* Use after close: errors, and the dead handle stays dead after reuse. */
	detpath_close(a);
	CHECK(detpath_send_to(a, "x", 1, "127.0.0.1", 9) == -EBADF, "send after close");
	CHECK_MSG("closed");
	CHECK(detpath_recv(a, buf, sizeof buf, 0, &meta) == -EBADF, "recv after close");
	CHECK(detpath_capabilities(a) == NULL, "capabilities after close");
	CHECK(detpath_counters(a, &c) == -EBADF, "counters after close");
	detpath_close(a);
	CHECK_MSG("closed");
	struct detpath_endpoint *again = must_open("udp://127.0.0.1:0");
	CHECK(again != a, "a new handle differs from the dead one");
	CHECK(detpath_counters(a, &c) == -EBADF, "the dead handle is still dead");
	CHECK(detpath_counters(again, &c) == 0, "the new one works");
	detpath_close(again);
	detpath_close(b);

	CHECKS_DONE();
	return 0;
}
