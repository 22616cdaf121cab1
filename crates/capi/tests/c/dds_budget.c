/*
 * TRANSPORT_PRIORITY and LATENCY_BUDGET from C: the QoS text names them,
 * bad budgets are refused with a message, a reader's budget status counts
 * every sample once, and detpath_dds_reader_wait_over_budget() wakes for
 * samples over a budget nothing can meet (1 ns). Two participants on
 * 127.0.0.1 (one host: one clock) in domain 72, so it runs anywhere.
 * Run by tests/c_abi.rs; prints "ok: N checks" and exits 0, or names the
 * failed check and exits 1.
 */
#include "check.h"

#include <errno.h>
#include <unistd.h>

#define QOS "reliability=reliable;history=keep_all;transport_priority=30"

static uint64_t sum(const uint64_t *v, int n)
{
	uint64_t s = 0;
	for (int i = 0; i < n; i++)
		s += v[i];
	return s;
}

int main(void)
{
	struct detpath_dds_participant *a = detpath_dds_participant_new(72, "udp://127.0.0.1:25410", "127.0.0.1");
	struct detpath_dds_participant *b = detpath_dds_participant_new_opts(72, "udp://127.0.0.1:25412", "127.0.0.1", "clock=auto;priority_map=0=CS0,1=AF21,40=EF");
	CHECK(detpath_dds_participant_new_opts(72, "udp://127.0.0.1:25414", "127.0.0.1", "clock=ptp") == NULL, "bad option");
	CHECK_MSG("auto or synced");
	CHECK(a && b, "two participants");

	CHECK(detpath_dds_reader_new(b, "T", "t::T", 0, "latency_budget=0us") == NULL, "budget 0");
	CHECK_MSG("above 0 and at most 1h");
	CHECK(detpath_dds_writer_new(a, "T", "t::T", 0, "latency_budget=2h") == NULL, "budget beyond an hour");
	CHECK_MSG("latency_budget");
	CHECK(detpath_dds_writer_new(a, "T", "t::T", 0, "transport_priority=high") == NULL, "priority not a number");
	CHECK_MSG("transport_priority");

	/* A budget nothing meets: every sample is over it. */
	struct detpath_dds_writer *w = detpath_dds_writer_new(a, "T", "t::T", 0, QOS ";latency_budget=1ns");
	struct detpath_dds_reader *r = detpath_dds_reader_new(b, "T", "t::T", 0, QOS ";latency_budget=1ns");
	CHECK(w && r, "writer and reader");
	struct detpath_dds_budget_status bs;
	CHECK(detpath_dds_reader_budget_status(r, NULL) == -EINVAL, "NULL out");
	CHECK(detpath_dds_reader_budget_status((struct detpath_dds_reader *)w, &bs) == -EBADF, "a writer handle");
	CHECK(detpath_dds_reader_wait_over_budget(r, 50000000LL) == 0, "nothing written: nothing late");

	struct detpath_dds_writer_status ws = {0};
	for (int i = 0; i < 500 && detpath_dds_writer_status(w, &ws) == 0 && ws.matched_subscriptions == 0; i++)
		usleep(10000);
	CHECK(ws.matched_subscriptions == 1, "matched");

	unsigned char s[8] = {0, 1, 0, 0, 1, 2, 3, 4};
	for (int i = 0; i < 10; i++)
		CHECK(detpath_dds_write(w, s, sizeof s, NULL) == 0, "write %d", i);
	CHECK(detpath_dds_reader_wait_over_budget(r, 5000000000LL) == 1, "a late sample wakes the reader");
	struct detpath_dds_sample_info info;
	unsigned char buf[64];
	int taken = 0;
	while (taken < 10 && detpath_dds_take(r, buf, sizeof buf, &info, 5000000000LL) == (long)sizeof s)
		taken++;
	CHECK(taken == 10, "took %d", taken);
	CHECK(detpath_dds_reader_budget_status(r, &bs) == 0, "status");
	CHECK(bs.budget_ns == 1, "budget %lld", (long long)bs.budget_ns);
	CHECK(bs.within + bs.over + bs.unjudged + bs.implausible == 10, "every sample counted once");
	CHECK(bs.clock == DETPATH_DDS_CLOCK_SAME_HOST, "one host, one clock: %u", bs.clock);
	CHECK(bs.over == 10 && bs.over_change == 10, "all over: %llu (change %llu)", (unsigned long long)bs.over, (unsigned long long)bs.over_change);
	CHECK(sum(bs.over_by_cause, DETPATH_DDS_BUDGET_CAUSES) == 10, "each has a cause");
	CHECK(bs.latency_count == 10 && sum(bs.latency_buckets, DETPATH_DDS_LATENCY_BUCKETS) == 10, "in the histogram");
	CHECK(bs.latency_max_ns > 0 && bs.latency_sum_ns >= bs.latency_max_ns, "latencies");
	CHECK(detpath_dds_latency_bucket_bound_ns(0) == 5000 && detpath_dds_latency_bucket_bound_ns(DETPATH_DDS_LATENCY_BUCKETS - 1) == UINT64_MAX, "bucket bounds");
	CHECK(detpath_dds_reader_budget_status(r, &bs) == 0 && bs.over_change == 0, "read again: no change");
	CHECK(detpath_dds_reader_wait_over_budget(r, 100000000LL) == 0, "status read: nothing new is late");

	CHECK(detpath_dds_writer_delete(w) == 0 && detpath_dds_reader_delete(r) == 0, "delete");
	CHECK(detpath_dds_reader_wait_over_budget(r, 0) == -EBADF, "use after delete");
	CHECK(detpath_dds_participant_delete(a) == 0 && detpath_dds_participant_delete(b) == 0, "delete participants");
	CHECKS_DONE();
	return 0;
}
