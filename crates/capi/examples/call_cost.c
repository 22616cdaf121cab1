/*
 * call_cost: nanoseconds per detpath_recv() call that finds nothing
 * (timeout 0) on an open endpoint: the C boundary's fixed cost plus the
 * datapath's empty check. Run by boundary_rtt.rs beside the same loop in
 * Rust and Python.
 *
 *   call_cost SPEC CALLS   ->   prints "ns_per_call <float>"
 */
#include <detpath.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s SPEC CALLS\n", argv[0]);
		return 2;
	}
	long calls = atol(argv[2]);
	struct detpath_endpoint *ep = detpath_open(argv[1]);
	if (!ep) {
		fprintf(stderr, "call_cost: %s\n", detpath_last_error());
		return 1;
	}
	static unsigned char buf[2048];
	double t0 = now_ns();
	for (long i = 0; i < calls; i++) {
		if (detpath_recv(ep, buf, sizeof buf, 0, NULL) != 0) {
			fprintf(stderr, "call_cost: unexpected datagram or error: %s\n", detpath_last_error());
			return 1;
		}
	}
	printf("ns_per_call %.1f\n", (now_ns() - t0) / (double)calls);
	detpath_close(ep);
	return 0;
}
