/*
 * echo: a detpath echo server in C. Every datagram goes back to its sender
 * over the same endpoint, on any datapath the spec names.
 *
 *   cc -O2 echo.c $(pkg-config --cflags --libs detpath) -o echo
 *   ./echo 'afxdp://eth1?port=7000' [--count N] [--batch] [--blocking]
 *
 * --count N   stop after N datagrams (default: until SIGINT/SIGTERM)
 * --batch     receive and send up to 32 datagrams per call
 * --blocking  sleep in the kernel while waiting (default: busy-poll)
 *
 * Prints "echo on ADDR:PORT (CAPABILITIES)" once ready, and the counters
 * when it stops. Exit status 0, or 1 with detpath's message on stderr.
 */
#include <detpath.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 32
#define SLOT_BYTES 2048
#define WAIT_US 100000 /* wake up every 100 ms to look at the stop flag */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int fail(const char *what)
{
	fprintf(stderr, "echo: %s: %s\n", what, detpath_last_error());
	return 1;
}

/* One datagram per call. Returns the datagrams echoed or -1. */
static long echo_single(struct detpath_endpoint *ep, unsigned long long limit)
{
	static unsigned char buf[65536];
	struct detpath_rx_meta meta;
	unsigned long long echoed = 0;

	while (!stop && (limit == 0 || echoed < limit)) {
		long n = detpath_recv(ep, buf, sizeof buf, WAIT_US, &meta);
		if (n < 0)
			return fail("receive"), -1;
		if (meta.rx_ns == 0)
			continue; /* timeout: look at the stop flag */
		if (detpath_send_to_addr(ep, buf, (size_t)n, &meta.peer) < 0)
			return fail("send"), -1;
		echoed++;
	}
	return (long)echoed;
}

/* Up to BATCH datagrams per call. Returns the datagrams echoed or -1. */
static long echo_batch(struct detpath_endpoint *ep, unsigned long long limit)
{
	static unsigned char bufs[BATCH][SLOT_BYTES];
	struct detpath_rx_slot slots[BATCH];
	struct detpath_tx_datagram out[BATCH];
	unsigned long long echoed = 0;

	for (int i = 0; i < BATCH; i++) {
		slots[i].buf = bufs[i];
		slots[i].cap = SLOT_BYTES;
	}
	while (!stop && (limit == 0 || echoed < limit)) {
		long n = detpath_recv_batch(ep, slots, BATCH, WAIT_US);
		if (n < 0)
			return fail("receive"), -1;
		for (long i = 0; i < n; i++) {
			out[i].buf = slots[i].buf;
			out[i].len = slots[i].meta.len;
			out[i].peer = slots[i].meta.peer;
		}
		for (long done = 0; done < n;) {
			int k = detpath_send_batch(ep, out + done, (size_t)(n - done));
			if (k < 0)
				return fail("send"), -1;
			done += k;
		}
		echoed += (unsigned long long)n;
	}
	return (long)echoed;
}

int main(int argc, char **argv)
{
	const char *spec = NULL;
	unsigned long long limit = 0;
	int batch = 0, blocking = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
			limit = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--batch") == 0)
			batch = 1;
		else if (strcmp(argv[i], "--blocking") == 0)
			blocking = 1;
		else if (!spec && argv[i][0] != '-')
			spec = argv[i];
		else
			spec = NULL, i = argc;
	}
	if (!spec) {
		fprintf(stderr, "usage: %s SPEC [--count N] [--batch] [--blocking]\n", argv[0]);
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	struct detpath_endpoint *ep = detpath_open(spec);
	if (!ep)
		return fail(spec);
	struct detpath_addr local;
	if (detpath_local_addr(ep, &local) < 0 || detpath_set_blocking(ep, blocking) < 0) {
		int rc = fail("endpoint");
		detpath_close(ep);
		return rc;
	}
	printf("echo on %s:%u (%s)\n", local.ip, local.port, detpath_capabilities(ep));
	fflush(stdout);

	long echoed = batch ? echo_batch(ep, limit) : echo_single(ep, limit);

	struct detpath_counters c;
	if (detpath_counters(ep, &c) == 0)
		printf("echoed %ld; rx_packets %" PRIu64 " tx_packets %" PRIu64 " rx_truncated %" PRIu64 " tx_errors %" PRIu64 "\n",
		       echoed, c.rx_packets, c.tx_packets, c.rx_truncated, c.tx_errors);
	detpath_close(ep);
	return echoed < 0 ? 1 : 0;
}
